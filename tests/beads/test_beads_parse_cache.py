"""The parse of issues.jsonl kept for the next process: used only for the same bytes."""

from __future__ import annotations

import gc
import os
import tracemalloc
from pathlib import Path

import pytest

from cortexgraph.storage.beads import issue_file, issue_map, open_tracker
from cortexgraph.storage.beads.issue_file import parse_issue_lines


@pytest.fixture
def spies(monkeypatch) -> dict[str, list[str]]:
    """Whole-file parses (their sizes) and single issue lines read lazily, from here on."""
    seen: dict[str, list[str]] = {"files": [], "lines": []}
    parse, read_line = issue_file.parse_issue_lines, issue_map.issue_from_line

    def parse_spy(data: bytes, source: str = "issues.jsonl"):
        if data:
            seen["files"].append(str(len(data)))
        return parse(data, source)

    def line_spy(line: str):
        seen["lines"].append(line)
        return read_line(line)

    monkeypatch.setattr(issue_file, "parse_issue_lines", parse_spy)
    monkeypatch.setattr(issue_map, "issue_from_line", line_spy)
    return seen


def _store_with_closed_merges(tmp_path: Path, clock) -> tuple[Path, list[str]]:
    store = tmp_path / "store"
    tracker = open_tracker(store, search_parents=False, clock=clock)
    with tracker.batch("semantic-merge"):
        closed = [tracker.create(f"merge {i}", labels=["merge"]).id for i in range(30)]
        for issue_id in closed:
            tracker.close(issue_id, "merged")
        open_ids = [
            tracker.create("digest", labels=["digest"], dedupe_key="digest:high").id,
            tracker.create("merge 30", labels=["merge"]).id,
        ]
    return store, open_ids


def test_the_next_process_reads_only_the_issues_its_query_wants(tmp_path, clock, spies):
    """A run's query for open merge issues read the whole file in every process (14.5k closed
    issues at 100k memories); with the last writer's parse for the same bytes it reads the
    one open merge issue's line, and the answer is a full parse's."""
    store, (digest_id, open_merge) = _store_with_closed_merges(tmp_path, clock)
    spies["files"].clear(), spies["lines"].clear()
    tracker = open_tracker(store, search_parents=False, clock=clock)  # the next process

    found = tracker.query(labels=["merge"], status="open")

    assert [i.id for i in found] == [open_merge]
    assert spies["files"] == [] and len(spies["lines"]) == 1
    full = parse_issue_lines(tracker.path.read_bytes())
    assert found == [i for i in full.issues.values() if i.id == open_merge]
    # every issue still answers, read when asked for
    assert tracker.query(labels=["merge"]) == [
        i for i in full.issues.values() if "merge" in i.labels
    ]
    assert tracker.get(digest_id) == full.issues[digest_id]


def test_a_batch_in_the_next_process_finds_a_dedupe_key_without_reading_issues(
    tmp_path, clock, spies
):
    store, (digest_id, _) = _store_with_closed_merges(tmp_path, clock)
    spies["files"].clear(), spies["lines"].clear()
    tracker = open_tracker(store, search_parents=False, clock=clock)
    with tracker.batch("decay-analyzer"):
        again = tracker.create("digest", labels=["digest"], dedupe_key="digest:high")
        tracker.update(digest_id, description="3 memories fading")
    assert again.id == digest_id
    assert spies["files"] == []
    assert len(spies["lines"]) == 1  # the digest, read to change it
    assert open_tracker(store, search_parents=False).get(digest_id).description == (
        "3 memories fading"
    )


def test_other_bytes_of_the_same_size_and_time_are_parsed_again(tmp_path, clock, spies):
    """An edit by hand that keeps the size and the modification time still invalidates the
    kept parse: it is keyed by the bytes' hash, not by stat data."""
    store, (_, open_merge) = _store_with_closed_merges(tmp_path, clock)
    spies["files"].clear()
    open_tracker(store, search_parents=False).query(labels=["merge"], status="open")
    assert spies["files"] == []  # the same bytes: the kept parse
    path = store / ".beads" / "issues.jsonl"
    before = os.stat(path)
    text = path.read_text()
    assert text.count('"title":"merge 30"') == 1
    path.write_text(text.replace('"title":"merge 30"', '"title":"merge 99"'))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size
    spies["files"].clear()

    found = open_tracker(store, search_parents=False).query(labels=["merge"], status="open")

    assert [(i.id, i.title) for i in found] == [(open_merge, "merge 99")]
    assert len(spies["files"]) == 1


@pytest.mark.parametrize("damage", ["torn", "foreign"])
def test_a_damaged_parse_cache_is_ignored_and_rewritten(tmp_path, clock, spies, damage):
    store, (_, open_merge) = _store_with_closed_merges(tmp_path, clock)
    cache = store / ".git" / "cortexgraph-beads.parsed"
    kept = cache.read_bytes()
    cache.write_bytes(kept[: len(kept) // 2] if damage == "torn" else b"x" + kept[1:])
    spies["files"].clear()

    found = open_tracker(store, search_parents=False).query(labels=["merge"], status="open")

    assert [i.id for i in found] == [open_merge]
    assert len(spies["files"]) == 1  # parsed, as without a cache
    spies["files"].clear()
    open_tracker(store, search_parents=False).query(labels=["merge"])
    assert spies["files"] == []  # and kept again for the next process


def test_a_file_with_an_unreadable_line_is_parsed_every_time(tmp_path, clock, spies):
    """Only clean files are kept: an unreadable line's report comes from a parse."""
    store, _ = _store_with_closed_merges(tmp_path, clock)
    spies["files"].clear()
    assert open_tracker(store, search_parents=False).unreadable_lines() == []
    assert spies["files"] == []  # clean: the kept parse
    path = store / ".beads" / "issues.jsonl"
    path.write_text(path.read_text() + "{not json\n")
    for _ in range(2):
        spies["files"].clear()
        fresh = open_tracker(store, search_parents=False)
        assert [n for n, _ in fresh.unreadable_lines()] == [33]
        assert len(spies["files"]) == 1


@pytest.fixture
def decoded(monkeypatch) -> list[str]:
    """The lines of a kept parse decoded from the file's bytes, from here on."""
    from cortexgraph.storage.beads import issue_lines

    seen: list[str] = []
    real = issue_lines.decode_line

    def spy(data: bytes, start: int, end: int) -> str:
        seen.append(real(data, start, end))
        return seen[-1]

    monkeypatch.setattr(issue_lines, "decode_line", spy)
    return seen


def test_the_next_process_decodes_only_the_lines_it_reads(tmp_path, clock, decoded):
    """The kept parse holds each line as a stretch of the file's bytes: a query decodes the
    line of the one issue it returns, not the whole file."""
    store, (digest_id, _) = _store_with_closed_merges(tmp_path, clock)
    decoded.clear()

    found = open_tracker(store, search_parents=False).query(labels=["digest"])

    assert [i.id for i in found] == [digest_id]
    assert len(decoded) == 1 and f'"id":"{digest_id}"' in decoded[0]


def test_a_batch_in_the_next_process_writes_the_lines_it_did_not_change_as_they_were(
    tmp_path, clock, git_cmd, decoded
):
    """A run that changes one issue decodes that issue's line alone, and the file it writes
    (and commits) is the file before with that one line replaced, valid to a full parse."""
    store, (digest_id, open_merge) = _store_with_closed_merges(tmp_path, clock)
    path = store / ".beads" / "issues.jsonl"
    before = path.read_bytes().split(b"\n")
    decoded.clear()
    tracker = open_tracker(store, search_parents=False, clock=clock)

    with tracker.batch("consolidation"), tracker.batch("semantic-merge"):
        tracker.close(open_merge, "merged")

    assert len(decoded) == 1 and f'"id":"{open_merge}"' in decoded[0]
    after = path.read_bytes().split(b"\n")
    assert [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == [
        before.index(decoded[0].encode())
    ]
    full = parse_issue_lines(path.read_bytes())
    assert full.issues[open_merge].status == "closed" and full.unreadable == []
    assert git_cmd(store, "show", "HEAD:.beads/issues.jsonl").encode() == path.read_bytes()
    assert git_cmd(store, "status", "--porcelain") == ""
    assert open_tracker(store, search_parents=False).get(digest_id) == full.issues[digest_id]


def _count_walks(monkeypatch) -> list[int]:
    """The sizes of the issue maps walked whole (``IssueMap.summaries``) from now on."""
    from cortexgraph.storage.beads.issue_map import IssueMap

    walked: list[int] = []
    real = IssueMap.summaries

    def counted(self):
        walked.append(len(self))
        return real(self)

    monkeypatch.setattr(IssueMap, "summaries", counted)
    return walked


def test_a_query_by_label_looks_only_at_the_issues_carrying_it_and_keeps_file_order(
    tmp_path, clock, monkeypatch
):
    """The kept parse indexes its issues by label: a query for one label does not walk the
    other issues (14.5k closed merge issues at 100k memories). Issues changed or opened
    since come in file order with the kept ones, as a full parse of the file gives them."""
    store, (digest_id, open_merge) = _store_with_closed_merges(tmp_path, clock)
    walked = _count_walks(monkeypatch)
    tracker = open_tracker(store, search_parents=False, clock=clock)
    assert [i.id for i in tracker.query(labels=["digest"])] == [digest_id]
    assert walked == []

    closed = [i.id for i in tracker.query(labels=["merge"], status="closed")]
    with tracker.batch("consolidation"):
        tracker.update(closed[3], labels=["merge", "digest"])  # gains the label, in place
        tracker.update(digest_id, labels=["review"])  # loses it
        new = tracker.create("late digest", labels=["digest"]).id
        tracker.update(closed[1], labels=["digest"])
        got = [i.id for i in tracker.query(labels=["digest"])]
        merges = [i.id for i in tracker.query(labels=["merge"], status="open")]

    full = parse_issue_lines(tracker.path.read_bytes())
    assert got == [i.id for i in full.issues.values() if "digest" in i.labels]
    assert got == [closed[1], closed[3], new]
    assert merges == [open_merge]


def test_a_batch_in_the_next_process_takes_the_dedupe_keys_from_the_kept_parse(
    tmp_path, clock, monkeypatch
):
    """The kept parse holds each dedupe key's holder: a batch's first change in the next
    process does not walk every issue to find them, and a key is still held once."""
    store, (digest_id, _) = _store_with_closed_merges(tmp_path, clock)
    walked = _count_walks(monkeypatch)
    tracker = open_tracker(store, search_parents=False, clock=clock)
    with tracker.batch("decay-analyzer"):
        again = tracker.create("digest", labels=["digest"], dedupe_key="digest:high")
        low = tracker.create("digest", labels=["digest"], dedupe_key="digest:low")
        assert tracker.create("digest", labels=["digest"], dedupe_key="digest:low").id == low.id
        assert walked == []

    assert again.id == digest_id and low.id != digest_id
    assert walked == []  # the new parse kept at the end: the old one with these put in


def test_the_parse_kept_after_a_batch_is_the_one_a_full_parse_gives(tmp_path, clock):
    """The kept parse of the file a batch wrote is made from the one it read and the
    issues it set: the same ids, lines, statuses, labels and key holders as a full parse."""
    from cortexgraph.storage.beads.parse_cache import _columns, bytes_key, load_parsed
    from cortexgraph.storage.beads.schema import DEDUPE_KEY

    store, (digest_id, open_merge) = _store_with_closed_merges(tmp_path, clock)
    tracker = open_tracker(store, search_parents=False, clock=clock)
    closed = [i.id for i in tracker.query(labels=["merge"], status="closed")]
    with tracker.batch("consolidation"):
        tracker.update(closed[2], labels=["merge", "digest"])
        tracker.update(closed[5], status="open")
        tracker.update(digest_id, metadata={DEDUPE_KEY: "digest:old"})  # gives up its key
        late = tracker.create("digest", labels=["digest"], dedupe_key="digest:late").id
        tracker.claim(open_merge, "semantic-merge")
        tracker.update(closed[7], labels=[])

    data = tracker.path.read_bytes()
    kept = load_parsed(tracker._file.parse_cache, data, bytes_key(data))
    assert kept is not None
    full = parse_issue_lines(data)
    assert _columns(kept) == _columns(full)
    holders = kept.issues.dedupe_holders()
    assert holders["digest:late"] == late and holders["digest:old"] == digest_id
    assert "digest:high" not in holders
    assert kept.line_of == full.line_of and kept.to_bytes() == data


def test_a_commit_does_not_hash_again_the_file_its_process_read(tmp_path, clock, monkeypatch):
    """The next process hashes the file it reads to match the kept parse, and its commit
    matched HEAD's blob against that same file by hashing it again (11 ms at 100k)."""
    from cortexgraph.storage.beads import parse_cache

    store, _ = _store_with_closed_merges(tmp_path, clock)
    head_bytes = (store / ".beads" / "issues.jsonl").read_bytes()
    hashed: list[int] = []
    real_sha1 = parse_cache.hashlib.sha1

    class CountingHashlib:
        @staticmethod
        def sha1(prefix: bytes, **kw):
            digest = real_sha1(prefix, **kw)
            hashed.append(int(prefix.split(b" ")[1].rstrip(b"\0")))
            return digest

    monkeypatch.setattr(parse_cache, "hashlib", CountingHashlib)
    tracker = open_tracker(store, search_parents=False, clock=clock)  # the next process
    with tracker.batch("semantic-merge"):
        assert len(tracker.query(labels=["merge"], status="open")) == 1
        tracker.create("merge 31", labels=["merge"])
    assert hashed.count(len(head_bytes)) == 1
    committed = tracker.repo.head.commit.tree / ".beads" / "issues.jsonl"
    assert committed.data_stream.read() == tracker.path.read_bytes() != head_bytes


def test_the_files_bytes_are_not_kept_once_the_tracker_is_dropped(tmp_path, clock):
    """A long-lived MCP server drops a tracker (and the file versions it held: 15 MB each at
    100k memories); the blob shas of those bytes, kept so that one version is not hashed
    twice, must not keep the bytes alive after it."""
    store, _ = _store_with_closed_merges(tmp_path, clock)
    path = store / ".beads" / "issues.jsonl"
    with path.open("ab") as f:  # a foreign record, kept byte for byte: a 4 MB file
        f.write(b'{"_type": "attachment", "blob": "' + b"x" * 4_000_000 + b'"}\n')
    gc.collect()
    tracemalloc.start()
    try:
        tracker = open_tracker(store, search_parents=False, clock=clock)
        with tracker.batch("semantic-merge"):  # reads, writes and commits the file
            assert len(tracker.query(labels=["merge"], status="open")) == 1
            tracker.create("merge 31", labels=["merge"])
        held, _ = tracemalloc.get_traced_memory()
        del tracker
        gc.collect()
        left, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held > 8_000_000  # the tracker held the versions it read and wrote
    assert left < 1_000_000
