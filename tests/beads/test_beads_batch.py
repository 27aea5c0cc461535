"""Batches: one commit per agent run, readable per issue, safe against a concurrent writer."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from pathlib import Path

import pytest
from child_env import run_with_file_size_limit

from cortexgraph.storage.beads import open_tracker

CTX = mp.get_context("forkserver")  # not fork: see test_beads_concurrency.py


def _ids_on_lines(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()]


def test_a_batch_is_one_commit_listing_each_change(tmp_path: Path, git_cmd, clock):
    store = tmp_path / "store"
    tracker = open_tracker(store, search_parents=False, clock=clock)
    with tracker.batch("semantic-merge"):
        a = tracker.create("first finding", labels=["x"], dedupe_key="k:a")
        b = tracker.create("second finding", labels=["x"])
        assert tracker.create("again", dedupe_key="k:a").id == a.id  # dedupe inside a batch
        assert tracker.claim(a.id, "semantic-merge") is not None
        assert tracker.claim(a.id, "someone-else") is None
        tracker.close(a.id, "merged")
        assert tracker.get(a.id).status == "closed"  # reads see the batch's changes
        assert tracker.history() == []  # nothing committed yet

    subjects = git_cmd(store, "log", "--format=%s").splitlines()
    assert subjects == ["semantic-merge: 4 issue changes (opened 2, claimed 1, closed 1)"]
    body = git_cmd(store, "log", "-1", "--format=%b")
    assert f'{a.id}: opened "first finding"' in body and f"{a.id}: closed (merged)" in body
    assert f"{b.id}: opened" in body
    # the file holds each issue once (the appended copies are folded), and git agrees
    assert sorted(_ids_on_lines(tracker.path)) == sorted([a.id, b.id])
    assert git_cmd(store, "status", "--porcelain") == ""
    patch = git_cmd(store, "log", "-p", "--format=%s", "--", ".beads/issues.jsonl")
    assert sum(a.id in line for line in patch.splitlines() if line.startswith("+{")) == 1
    assert [c.message.splitlines()[0] for c in tracker.history(a.id)] == subjects
    git_cmd(store, "fsck", "--strict")


def test_a_later_batch_diff_shows_only_the_issues_it_changed(tmp_path: Path, git_cmd, clock):
    store = tmp_path / "store"
    tracker = open_tracker(store, search_parents=False, clock=clock)
    with tracker.batch("cluster-detector"):
        ids = [tracker.create(f"finding {i}").id for i in range(5)]
    with tracker.batch("semantic-merge"):
        tracker.claim(ids[2], "semantic-merge")
        tracker.close(ids[2], "done")

    diff = git_cmd(store, "show", "--format=", "HEAD", "--", ".beads/issues.jsonl")
    changed = [line for line in diff.splitlines() if line[:2] in ("+{", "-{")]
    assert len(changed) == 2 and all(ids[2] in line for line in changed)
    assert _ids_on_lines(tracker.path) == ids  # order kept: the issue stays on its line


def test_a_batch_commits_what_it_did_when_the_agent_fails(tmp_path: Path, git_cmd, clock):
    store = tmp_path / "store"
    tracker = open_tracker(store, search_parents=False, clock=clock)
    with pytest.raises(RuntimeError), tracker.batch("decay-analyzer"):
        tracker.create("found before the failure")
        raise RuntimeError("agent crashed")
    assert git_cmd(store, "log", "--format=%s").splitlines() == [
        "decay-analyzer: 1 issue change (opened 1)"
    ]


def test_a_writer_outside_the_batch_is_seen_and_kept(tmp_path: Path, git_cmd, clock):
    store = tmp_path / "store"
    tracker = open_tracker(store, search_parents=False, clock=clock)
    issue = tracker.create("shared work")
    person = open_tracker(store, search_parents=False, clock=clock)  # e.g. `cortexgraph issues`
    with tracker.batch("semantic-merge"):
        tracker.create("batch finding")
        person.close(issue.id, "done by hand")  # its own commit, while the batch is open
        assert tracker.claim(issue.id, "semantic-merge") is None  # re-read: no longer open
        tracker.update(issue.id, priority=1)
    fresh = open_tracker(store, search_parents=False)
    assert fresh.get(issue.id).status == "closed" and fresh.get(issue.id).priority == 1
    assert len(fresh.query()) == 2
    assert len(_ids_on_lines(tracker.path)) == 2
    assert git_cmd(store, "status", "--porcelain") == ""


def _key(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return (st.st_ino, st.st_size, st.st_mtime_ns)


@pytest.mark.parametrize("when", ["before its first change", "between its changes", "after"])
def test_a_batch_says_whether_anyone_else_wrote_while_it_was_open(
    tmp_path: Path, git_cmd, clock, when
):
    """What a consolidation run's state relies on (cortexgraph.run_state.files_seen): a batch
    of only its own changes says so and what it left the file as; another writer's change
    at any time while it is open is told."""
    store = tmp_path / "store"
    tracker = open_tracker(store, search_parents=False, clock=clock)
    tracker.create("shared work")
    with tracker.batch("consolidation") as own:
        tracker.create("batch finding")
        tracker.create("another finding")
    assert not own.others_wrote and own.left == _key(tracker.path)
    with tracker.batch("consolidation") as idle:
        pass
    assert not idle.others_wrote and idle.left == _key(tracker.path)

    person = open_tracker(store, search_parents=False, clock=clock)  # another process's
    with tracker.batch("consolidation") as state:
        if when == "before its first change":
            person.create("by hand")
        tracker.create("a finding")
        if when == "between its changes":
            person.create("by hand")
        tracker.create("a second finding")
        if when == "after":
            person.create("by hand")
    assert state.others_wrote
    assert len(open_tracker(store, search_parents=False).query()) == 6


def _claim_in_batches(store: str, ids: list[str], name: str, barrier, results) -> None:
    tracker = open_tracker(store, search_parents=False)
    barrier.wait()
    with tracker.batch(name):
        for issue_id in ids:
            got = tracker.claim(issue_id, name)
            if got is not None:
                tracker.close(issue_id, f"done by {name}")
            results.put((issue_id, name if got is not None else None))


def test_batches_in_racing_processes_give_each_issue_to_exactly_one(tmp_path: Path, git_cmd):
    store = tmp_path / "store"
    tracker = open_tracker(store, search_parents=False)
    with tracker.batch("cluster-detector"):
        ids = [tracker.create(f"cluster {i}").id for i in range(40)]
    barrier, results = CTX.Barrier(3), CTX.Queue()
    procs = [
        CTX.Process(target=_claim_in_batches, args=(str(store), ids, f"w{k}", barrier, results))
        for k in range(3)
    ]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=60) for _ in range(3 * len(ids))]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0

    fresh = open_tracker(store, search_parents=False)
    for issue_id in ids:
        winners = [n for i, n in outcomes if i == issue_id and n is not None]
        assert len(winners) == 1, (issue_id, winners)
        assert fresh.get(issue_id).close_reason == f"done by {winners[0]}"
    assert sorted(_ids_on_lines(fresh.path)) == sorted(ids)
    assert len(git_cmd(store, "log", "--format=%s").splitlines()) <= 4  # one per batch at most
    assert git_cmd(store, "status", "--porcelain") == ""
    git_cmd(store, "fsck", "--strict")


def test_two_open_batches_in_turn_each_see_the_others_appends(tmp_path: Path, git_cmd, clock):
    # An append leaves the generation token alone (batch.py): the other holder must still
    # notice it, whichever of the two appended last and however many times in a row.
    store = tmp_path / "store"
    first = open_tracker(store, search_parents=False, clock=clock)
    ids = [first.create(f"cluster {i}").id for i in range(6)]
    second = open_tracker(store, search_parents=False, clock=clock)
    with first.batch("merge-a"), second.batch("merge-b"):
        assert first.claim(ids[0], "a") is not None
        assert first.claim(ids[1], "a") is not None  # two appends in a row by one holder
        assert second.claim(ids[0], "b") is None and second.claim(ids[1], "b") is None
        assert second.claim(ids[2], "b") is not None
        assert first.claim(ids[2], "a") is None
        made = second.create("found by b")
        assert first.get(made.id).title == "found by b"
        first.close(ids[0], "done by a")
        assert second.claim(ids[0], "b") is None
        assert second.get(ids[0]).status == "closed"
    fresh = open_tracker(store, search_parents=False)
    assert [fresh.get(i).assignee for i in ids[:3]] == ["a", "a", "b"]
    assert sorted(_ids_on_lines(fresh.path)) == sorted([*ids, made.id])
    assert git_cmd(store, "status", "--porcelain") == ""


def test_a_change_that_runs_out_of_space_is_neither_left_in_the_file_nor_committed(
    tmp_path: Path, git_cmd
):
    """A full disk mid-batch (the kernel's file-size limit: a short write, then an error): the
    caller is told, the cut line is not left in issues.jsonl, and the batch's commit lists only
    the changes that were written. The batch used to keep the failed change in its snapshot and
    commit it at the end."""
    store = tmp_path / "store"
    out = run_with_file_size_limit(
        """
        from cortexgraph.storage.beads import open_tracker
        from cortexgraph.storage.errors import StorageError
        tracker = open_tracker(Path(sys.argv[1]), search_parents=False)
        with tracker.batch("decay-analyzer"):
            kept = tracker.create("kept finding").id
            room_for(tracker.path, 40)
            try:
                tracker.create("lost finding " + "x" * 200)
                refused = ""
            except StorageError as e:
                refused = str(e)
            unlimited()
            after = tracker.create("written once there was room").id
            seen = sorted(i.title for i in tracker.query())
        print(json.dumps({"kept": kept, "after": after, "refused": refused, "seen": seen}))
        """,
        str(store),
    )
    assert "cannot write" in out["refused"]
    assert out["seen"] == ["kept finding", "written once there was room"]
    tracker = open_tracker(store, search_parents=False)
    assert _ids_on_lines(tracker.path) == [out["kept"], out["after"]]
    assert tracker.unreadable_lines() == []
    assert "lost finding" not in git_cmd(store, "log", "-p")
    subjects = git_cmd(store, "log", "--format=%s").splitlines()
    assert subjects == ["decay-analyzer: 2 issue changes (opened 2)"]


def _count_parses(monkeypatch) -> list[int]:
    """The sizes of the issue files parsed from here on (empty ones not counted)."""
    from cortexgraph.storage.beads import issue_file

    sizes: list[int] = []
    real = issue_file.parse_issue_lines

    def spy(data: bytes, source: str = "issues.jsonl"):
        if data:
            sizes.append(len(data))
        return real(data, source)

    monkeypatch.setattr(issue_file, "parse_issue_lines", spy)
    return sizes


def test_a_run_of_batches_parses_the_file_once(tmp_path: Path, git_cmd, clock, monkeypatch):
    """Each agent's batch commits on top of the last one's commit: HEAD's file is the bytes
    the tracker just committed, so it is not parsed again to apply the next batch. Nor is the
    next process's first read: the last writer kept its parse for those bytes."""
    store = tmp_path / "store"
    first = open_tracker(store, search_parents=False, clock=clock)
    with first.batch("setup"):
        ids = [first.create(f"finding {i}", labels=["x"]).id for i in range(20)]
    parses = _count_parses(monkeypatch)
    tracker = open_tracker(store, search_parents=False, clock=clock)  # the next run's process
    for n, author in enumerate(("decay-analyzer", "cluster-detector", "semantic-merge")):
        with tracker.batch(author):
            tracker.query(labels=["x"])
            tracker.close(ids[n], "done")
    assert parses == []  # the first read found its bytes' parse; three commits parsed nothing
    committed = git_cmd(store, "show", "HEAD:.beads/issues.jsonl")
    assert committed == tracker.path.read_text()
    assert [json.loads(line)["status"] for line in committed.splitlines()[:4]] == [
        "closed",
        "closed",
        "closed",
        "open",
    ]


def test_each_batch_commit_deflates_the_file_once_and_inflates_none(
    tmp_path: Path, git_cmd, clock, monkeypatch
):
    """A commit stored the file's blob, then `index.add` read, hashed and deflated the same
    bytes again, and the next commit inflated HEAD's blob, which was those bytes too (15 MB
    each at 100k memories). The index still ends as `git add` leaves it."""
    store = tmp_path / "store"
    tracker = open_tracker(store, search_parents=False, clock=clock)
    with tracker.batch("setup"):
        ids = [tracker.create(f"finding {i}", labels=["x"]).id for i in range(5)]
    odb = tracker.repo.odb
    stored: list[int] = []
    inflated: list[bytes] = []
    real_store, real_stream = odb.store, odb.stream

    def store_spy(istream):
        if istream.type in (b"blob", "blob"):  # ours bytes, GitPython's str
            stored.append(istream.size)
        return real_store(istream)

    def stream_spy(binsha):
        found = real_stream(binsha)
        if found.type in (b"blob", "blob"):
            inflated.append(binsha)
        return found

    monkeypatch.setattr(odb, "store", store_spy)
    monkeypatch.setattr(odb, "stream", stream_spy)
    for n, author in enumerate(("decay-analyzer", "cluster-detector", "semantic-merge")):
        with tracker.batch(author):
            tracker.close(ids[n], "done")
    assert len(stored) == 3  # one blob a commit
    assert inflated == []  # each HEAD was the blob stored just before
    assert git_cmd(store, "status", "--porcelain") == ""
    assert git_cmd(store, "diff", "--cached", "--stat") == ""


def test_a_commit_made_by_hand_between_batches_is_parsed_and_kept(
    tmp_path: Path, git_cmd, clock, monkeypatch
):
    """The cached parse is HEAD's only while HEAD holds our bytes: a person's commit of the
    file between two batches is read, and our next commit keeps their change."""
    store = tmp_path / "store"
    tracker = open_tracker(store, search_parents=False, clock=clock)
    with tracker.batch("setup"):
        ids = [tracker.create(f"finding {i}").id for i in range(5)]
    parses = _count_parses(monkeypatch)
    with tracker.batch("decay-analyzer"):
        tracker.close(ids[0], "done")
    assert parses == []
    text = tracker.path.read_text().replace("finding 4", "finding four, renamed by hand")
    tracker.path.write_text(text)
    git_cmd(store, "commit", "-q", "-am", "rename by hand")
    tracker.path.write_text(text.replace("finding 3", "finding 3, not committed yet"))
    with tracker.batch("semantic-merge"):
        tracker.close(ids[1], "done")
    assert len(parses) == 2  # the file as the person left it, and HEAD's (their commit)
    committed = git_cmd(store, "show", "HEAD:.beads/issues.jsonl")
    assert "finding four, renamed by hand" in committed and "not committed yet" not in committed
    assert [json.loads(line)["status"] for line in committed.splitlines()[:2]] == [
        "closed",
        "closed",
    ]
    assert "not committed yet" in tracker.path.read_text()


def test_each_batch_commit_joins_the_file_once(tmp_path: Path, git_cmd, clock, monkeypatch):
    """The commit's bytes (HEAD's file with our changes) are the file the batch just wrote
    when no one else changed it: they are taken as written, not joined from 15 MB of lines
    again; a hand edit left uncommitted still stays out of the commit."""
    from cortexgraph.storage.beads.issue_file import ParsedIssueFile

    store = tmp_path / "store"
    tracker = open_tracker(store, search_parents=False, clock=clock)
    with tracker.batch("setup"):
        ids = [tracker.create(f"finding {i}", labels=["x"]).id for i in range(5)]
    joined: list[int] = []
    real = ParsedIssueFile.to_bytes
    monkeypatch.setattr(ParsedIssueFile, "to_bytes", lambda s: joined.append(1) or real(s))
    for n, author in enumerate(("decay-analyzer", "cluster-detector", "semantic-merge")):
        with tracker.batch(author):
            tracker.close(ids[n], "done")
    assert len(joined) == 3  # the file's write, once a batch
    issues = store / ".beads" / "issues.jsonl"
    assert git_cmd(store, "show", "HEAD:.beads/issues.jsonl") == issues.read_text()
    issues.write_text(issues.read_text() + '{"id": "cg-hand", "title": "by hand"}\n')
    with tracker.batch("ltm-promoter"):
        tracker.close(ids[3], "done")
    committed = git_cmd(store, "show", "HEAD:.beads/issues.jsonl")
    assert "cg-hand" not in committed and json.loads(committed.splitlines()[3])["status"] == (
        "closed"
    )
    assert "cg-hand" in issues.read_text()


def test_a_new_processs_first_batch_commit_takes_head_from_the_file_it_read(
    tmp_path: Path, git_cmd, clock, monkeypatch
):
    """The next run's first commit needs HEAD's bytes of the file (15 MB at 100k memories):
    they are the bytes its batch read (the last run committed what it wrote), matched by
    blob sha, not inflated; a file edited by hand since is not taken for HEAD."""
    store = tmp_path / "store"
    first = open_tracker(store, search_parents=False, clock=clock)
    with first.batch("setup"):
        ids = [first.create(f"finding {i}", labels=["x"]).id for i in range(4)]
    for n, edit_by_hand in enumerate((False, True)):
        issues = store / ".beads" / "issues.jsonl"
        if edit_by_hand:  # uncommitted: the batch reads it, HEAD does not hold it
            issues.write_text(issues.read_text().replace("finding 3", "finding three"))
        tracker = open_tracker(store, search_parents=False, clock=clock)  # a new process's
        odb = tracker.repo.odb
        inflated: list[bytes] = []
        real_stream = odb.stream

        def stream_spy(binsha, real_stream=real_stream, inflated=inflated):
            found = real_stream(binsha)
            if found.type in (b"blob", "blob"):
                inflated.append(binsha)
            return found

        monkeypatch.setattr(odb, "stream", stream_spy)
        with tracker.batch("decay-analyzer"):
            tracker.close(ids[n], "done")
        assert len(inflated) == (1 if edit_by_hand else 0)
        committed = git_cmd(store, "show", "HEAD:.beads/issues.jsonl")
        assert json.loads(committed.splitlines()[n])["status"] == "closed"
        assert "finding 3" in committed  # the hand edit stays out of our commit
    assert "finding three" in issues.read_text()


def test_nested_batches_are_one_commit_listing_each_authors_changes(tmp_path, git_cmd, clock):
    store = tmp_path / "store"
    tracker = open_tracker(store, search_parents=False, clock=clock)
    with tracker.batch("consolidation"):
        with tracker.batch("cluster-detector"):
            a = tracker.create("cluster one")
            b = tracker.create("cluster two")
        with tracker.batch("semantic-merge"):
            tracker.claim(a.id, "semantic-merge")
            tracker.close(a.id, "merged")
        assert tracker.history() == []  # not yet: one commit at the end

    assert git_cmd(store, "log", "--format=%s").splitlines() == [
        "consolidation: 4 issue changes (opened 2, claimed 1, closed 1)"
    ]
    body = git_cmd(store, "log", "-1", "--format=%b")
    cluster, merge = body.strip().split("\n\n")
    assert cluster.startswith("cluster-detector:\n") and merge.startswith("semantic-merge:\n")
    assert f"\n{a.id}: opened" in cluster and f"\n{b.id}: opened" in cluster
    assert f"\n{a.id}: claimed by semantic-merge\n{a.id}: closed (merged)" in merge
    assert git_cmd(store, "status", "--porcelain") == ""
    assert [c.message.splitlines()[0] for c in tracker.history(b.id)] == [
        "consolidation: 4 issue changes (opened 2, claimed 1, closed 1)"
    ]


def _die_after_an_agent(store: str, results) -> None:
    tracker = open_tracker(store, search_parents=False)
    with tracker.batch("consolidation"):
        with tracker.batch("cluster-detector"):
            ids = [tracker.create(f"found {i}").id for i in range(2)]
        results.put(ids)
        results.close()
        results.join_thread()
        os._exit(1)  # killed between agents: the run's one commit never comes


def test_a_run_that_dies_between_agents_leaves_their_changes_to_the_next_commit(
    tmp_path: Path, git_cmd
):
    store = tmp_path / "store"
    open_tracker(store, search_parents=False).create("before the run")
    results = CTX.Queue()
    child = CTX.Process(target=_die_after_an_agent, args=(str(store), results))
    child.start()
    child.join(120)
    assert child.exitcode == 1
    found = results.get(timeout=10)
    assert not any(i in git_cmd(store, "show", "HEAD:.beads/issues.jsonl") for i in found)

    later = open_tracker(store, search_parents=False).create("the next run's finding")
    committed = git_cmd(store, "show", "HEAD:.beads/issues.jsonl")
    assert all(i in committed for i in [*found, later.id])  # nothing the dead run made is lost
    assert git_cmd(store, "status", "--porcelain") == ""
