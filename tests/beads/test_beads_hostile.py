"""Hostile bytes and hand edits in .beads/issues.jsonl (issue 15: High 3, Medium 10, Low).

Through the real CLI (the typer app in-process, and the installed ``cortexgraph`` script for the
"never a traceback" promise) and a real git repository.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
from child_env import child_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cortexgraph.cli.issues_cmd import app
from cortexgraph.storage.beads import open_tracker
from cortexgraph.storage.beads.schema import issue_to_line

runner = CliRunner()
BEADS_FILE = ".beads/issues.jsonl"
# Every character str.splitlines() breaks on besides "\n": the old reader lost issues on them.
LINE_BREAKS = ["\u2028", "\u2029", "\x85", "\x1c", "\x1d", "\x1e", "\x0b", "\x0c", "\r", "\r\n"]


@pytest.fixture
def storage(tmp_path, monkeypatch):
    path = tmp_path / "stm"
    monkeypatch.setenv("CORTEXGRAPH_STORAGE_PATH", str(path))
    monkeypatch.delenv("CORTEXGRAPH_BEADS_REPO", raising=False)
    return path


def _cli(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def _listed(*args: str) -> dict[str, dict]:
    return {d["id"]: d for d in json.loads(_cli("list", "--all", "--json", *args))}


@pytest.mark.parametrize("brk", LINE_BREAKS, ids=[repr(b) for b in LINE_BREAKS])
def test_close_reason_with_a_line_break_character_keeps_the_issue(storage, clock, brk):
    tracker = open_tracker(storage, search_parents=False, clock=clock)
    a = tracker.create("first")
    b = tracker.create(f"title{brk}with a break", description=f"x{brk}y")
    _cli("close", a.id, "--reason", f"a{brk}b")
    listed = _listed()
    assert set(listed) == {a.id, b.id}
    assert listed[a.id]["close_reason"] == f"a{brk}b".strip()
    assert listed[b.id]["title"] == f"title{brk}with a break"
    # written escaped: the file splits into exactly one line per issue, however it is split
    text = (storage / BEADS_FILE).read_text(encoding="utf-8")
    assert len(text.splitlines()) == 2
    # a fresh tracker (no cached snapshot) reads both back
    fresh = open_tracker(storage, search_parents=False)
    assert fresh.get(a.id).close_reason == f"a{brk}b".strip()
    assert fresh.unreadable_lines() == []


def test_issue_lines_escape_every_splitlines_break(clock, storage):
    issue = open_tracker(storage, search_parents=False, clock=clock).create("t")
    from dataclasses import replace

    hostile = replace(issue, description="".join(LINE_BREAKS) + "\u2028end")
    line = issue_to_line(hostile)
    assert line.splitlines() == [line]
    assert json.loads(line)["description"] == hostile.description


def test_file_damaged_by_the_old_reader_is_recovered(storage, clock):
    tracker = open_tracker(storage, search_parents=False, clock=clock)
    a = tracker.create("keeps its place")
    b = tracker.create("split apart")
    c = tracker.create("after the damage")
    tracker.close(b.id, "placeholder")
    path = storage / BEADS_FILE
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    # raw separators as the old writer wrote them (ensure_ascii=False), then the old rewrite
    # turned each into "\n" (it re-joined splitlines() fragments with "\n")
    damaged_b = lines[1].replace("placeholder", "one\u2028two\u2029three\x85four")
    damaged_b = damaged_b.replace("\u2028", "\n").replace("\u2029", "\n").replace("\x85", "\n")
    path.write_text("\n".join([lines[0], damaged_b, lines[2], "{broken", "also broken}"]) + "\n")

    fresh = open_tracker(storage, search_parents=False, clock=clock)
    assert {i.id for i in fresh.query(include_tombstones=True, status="closed")} == {b.id}
    recovered = fresh.get(b.id)
    assert recovered.close_reason == "one\u2028two\u2028three\u2028four"
    assert fresh.get(a.id).title == "keeps its place" and fresh.get(c.id).status == "open"
    # genuinely broken neighbours are not glued into anything: reported and kept
    assert [n for n, _ in fresh.unreadable_lines()] == [4, 5]  # numbered as written back
    # the next change writes the recovered issue back as one escaped line
    fresh.close(a.id, "done")
    text = path.read_text(encoding="utf-8")
    assert "{broken\nalso broken}\n" in text
    assert len([x for x in text.split("\n") if x.startswith('{"_type"')]) == 3
    assert open_tracker(storage, search_parents=False).get(b.id).close_reason == (
        "one\u2028two\u2028three\u2028four"
    )


def test_raw_separator_written_by_the_old_writer_reads_back_exactly(storage, clock):
    tracker = open_tracker(storage, search_parents=False, clock=clock)
    a = tracker.create("x")
    tracker.close(a.id, "placeholder")
    path = storage / BEADS_FILE
    path.write_text(path.read_text().replace("placeholder", "a\u2028b"), encoding="utf-8")
    assert open_tracker(storage, search_parents=False).get(a.id).close_reason == "a\u2028b"


def _corrupt_second_line(path: Path) -> bytes:
    raw = path.read_bytes().split(b"\n")
    raw[1] = raw[1].replace(b"second", b"sec\xffond\xc3")
    path.write_bytes(b"\n".join(raw))
    return raw[1]


def test_invalid_utf8_line_is_quarantined_and_the_tracker_keeps_working(storage, clock, git_cmd):
    tracker = open_tracker(storage, search_parents=False, clock=clock)
    a, b, c = (tracker.create(t) for t in ("first", "second", "third"))
    bad = _corrupt_second_line(storage / BEADS_FILE)

    listed = _listed()
    assert set(listed) == {a.id, c.id}
    fresh = open_tracker(storage, search_parents=False, clock=clock)
    assert [n for n, _ in fresh.unreadable_lines()] == [2]
    assert "UTF-8" in fresh.unreadable_lines()[0][1]

    _cli("close", c.id, "--reason", "done")  # the next change moves the line aside
    quarantine = storage / ".beads" / "issues.quarantine.jsonl"
    entries = [json.loads(x) for x in quarantine.read_text(encoding="utf-8").splitlines()]
    assert len(entries) == 1 and entries[0]["file"] == "issues.jsonl"
    assert base64.b64decode(entries[0]["line_base64"]) == bad  # the original bytes
    assert "UTF-8" in entries[0]["reason"]
    assert bad not in (storage / BEADS_FILE).read_bytes()
    assert set(_listed()) == {a.id, c.id}
    # the damage was never committed: HEAD keeps b's last good line, plus our close of c;
    # the work tree's loss of the line (to the quarantine file) is left for a person to see
    committed = _head_file(storage)
    assert json.loads(committed.splitlines()[1])["title"] == "second"
    assert json.loads(committed.splitlines()[2])["status"] == "closed"
    assert git_cmd(storage, "status", "--porcelain", "--", BEADS_FILE) == f" M {BEADS_FILE}\n"
    # the quarantine file is ours: not left untracked in the person's git status (issue 30)
    assert "quarantine" not in git_cmd(storage, "status", "--porcelain", "--untracked-files=all")
    git_cmd(storage, "fsck", "--strict")
    assert b.id not in _listed()
    # a second change quarantines nothing more
    _cli("close", a.id, "--reason", "done")
    assert len(quarantine.read_text(encoding="utf-8").splitlines()) == 1


def _script(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("cortexgraph")
    env = child_env(CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "stm"), OMP_NUM_THREADS="1")
    return subprocess.run(
        [str(exe), "issues", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )


def test_installed_cli_never_prints_a_traceback(storage, clock):
    tracker = open_tracker(storage, search_parents=False, clock=clock)
    a = tracker.create("first")
    tracker.create("second")
    _corrupt_second_line(storage / BEADS_FILE)
    listed = _script(storage.parent, "list")
    assert listed.returncode == 0, listed.stderr
    assert a.id in listed.stdout and "Traceback" not in listed.stderr
    assert "UTF-8" in listed.stderr  # says what it skipped

    # a tracker file that cannot be read at all: a short error and exit status 1
    (storage / BEADS_FILE).unlink()
    (storage / BEADS_FILE).mkdir()
    for args in (["list"], ["show", a.id], ["close", a.id, "--reason", "x"]):
        failed = _script(storage.parent, *args)
        assert failed.returncode == 1, (args, failed.stdout, failed.stderr)
        assert "Traceback" not in failed.stderr and failed.stderr.startswith("error: ")
        assert len(failed.stderr.splitlines()) <= 2


# -- a person's uncommitted edits stay theirs -------------------------------------------------


def _head_file(repo: Path) -> str:
    return subprocess.run(
        ["git", "show", f"HEAD:{BEADS_FILE}"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def test_uncommitted_hand_edit_is_not_swept_into_our_commit(user_repo, clock, git_cmd):
    tracker = open_tracker(user_repo, clock=clock)
    a = tracker.create("ours to close")
    b = tracker.create("edited by hand")
    path = user_repo / BEADS_FILE
    hand = path.read_text().replace("edited by hand", "EDITED BY HAND")
    hand += '{"note": "a line a person added"}\n'
    path.write_text(hand)

    tracker.close(a.id, "handled")

    committed = _head_file(user_repo)
    assert "EDITED BY HAND" not in committed and "a person added" not in committed
    assert json.loads(committed.splitlines()[0])["status"] == "closed"
    working = path.read_text()
    assert "EDITED BY HAND" in working and "a person added" in working
    assert tracker.get(a.id).status == "closed" and tracker.get(b.id).title == "EDITED BY HAND"
    # what is left uncommitted is exactly the person's edit, unstaged
    assert git_cmd(user_repo, "status", "--porcelain", "--", BEADS_FILE) == f" M {BEADS_FILE}\n"
    diff = [
        x
        for x in git_cmd(user_repo, "diff", "-U0", "--", BEADS_FILE).splitlines()
        if x[:1] in "+-" and not x.startswith(("+++", "---"))
    ]
    assert len(diff) == 3 and all(a.id not in x for x in diff)
    git_cmd(user_repo, "fsck", "--strict")


def test_staged_hand_edit_stays_staged_and_uncommitted(user_repo, clock, git_cmd):
    tracker = open_tracker(user_repo, clock=clock)
    a = tracker.create("ours to close")
    tracker.create("edited by hand")
    path = user_repo / BEADS_FILE
    path.write_text(path.read_text().replace("edited by hand", "EDITED BY HAND"))
    git_cmd(user_repo, "add", BEADS_FILE)

    tracker.close(a.id, "handled")

    assert "EDITED BY HAND" not in _head_file(user_repo)
    assert git_cmd(user_repo, "diff", "--", BEADS_FILE) == ""  # index == work tree
    staged = git_cmd(user_repo, "diff", "--cached", "-U0", "--", BEADS_FILE)
    assert "EDITED BY HAND" in staged and a.id not in staged
    # the person's commit then carries their edit and keeps ours
    git_cmd(user_repo, "commit", "-q", "-m", "hand edit", "--", BEADS_FILE)
    final = _head_file(user_repo)
    assert "EDITED BY HAND" in final and '"close_reason":"handled"' in final


def test_a_failed_commit_is_carried_by_the_next_one(user_repo, clock, monkeypatch):
    from cortexgraph.storage.beads import CommitError, git_repo

    tracker = open_tracker(user_repo, clock=clock)
    a = tracker.create("first")
    real = git_repo.GitFileCommitter.commit_file

    def failing(*args, **kwargs):
        raise CommitError("disk full")

    monkeypatch.setattr(git_repo.GitFileCommitter, "commit_file", failing)
    with pytest.raises(CommitError):
        tracker.close(a.id, "closed while git failed")
    monkeypatch.setattr(git_repo.GitFileCommitter, "commit_file", real)
    tracker.create("second")
    assert '"close_reason":"closed while git failed"' in _head_file(user_repo)
    assert tracker.path.read_text() == _head_file(user_repo)


# -- any hostile line: the rest of the file stays readable -------------------------------------


def _ticks():
    t = iter(range(1_767_225_600, 1_767_225_600 + 10_000))
    return lambda: float(next(t))


_HOSTILE_LINES = st.one_of(
    st.binary(max_size=300).map(lambda b: b.replace(b"\n", b" ")),
    st.text(max_size=200).map(lambda t: t.replace("\n", " ").encode("utf-8", "surrogatepass")),
    st.integers(1, 5000).map(lambda n: b"[" * n + b"]" * n),
    st.integers(1, 5000).map(lambda n: b'{"id":' * n),
    st.sampled_from([b'{"id":"cg-zzz","title":1}', b"[]", b"null", b'{"_type":"other"}']),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(hostile=st.lists(_HOSTILE_LINES, min_size=1, max_size=4))
def test_any_hostile_line_leaves_the_other_issues_readable(tmp_path_factory, hostile):
    from cortexgraph.storage.beads.issue_file import parse_issue_lines

    repo = tmp_path_factory.mktemp("hostile")
    tracker = open_tracker(repo, search_parents=False, clock=_ticks())
    a = tracker.create("before")
    b = tracker.create("after")
    path = repo / BEADS_FILE
    lines = path.read_bytes().split(b"\n")[:2]
    path.write_bytes(b"\n".join([lines[0], *hostile, lines[1]]) + b"\n")
    fresh = open_tracker(repo, search_parents=False, clock=_ticks())
    assert {a.id, b.id} <= {i.id for i in fresh.query()}
    fresh.close(a.id, "still works")
    assert open_tracker(repo, search_parents=False).get(a.id).status == "closed"
    parse_issue_lines(path.read_bytes())  # never raises


def test_a_commit_missing_an_object_head_needs_fails_typed_and_is_carried(user_repo, clock):
    """An object HEAD needs is gone from .git (a person's `git gc --prune=now` meanwhile, a
    damaged repository): the commit fails as CommitError, never gitdb's own BadObject, the
    change stays in the file and named as pending, and the first commit that works carries it."""
    from cortexgraph.storage.beads import CommitError

    tracker = open_tracker(user_repo, clock=clock)
    a = tracker.create("first")
    head = tracker.repo.head.commit
    tree = head.tree.hexsha
    loose = Path(tracker.repo.git_dir) / "objects" / tree[:2] / tree[2:]
    saved = loose.read_bytes()
    loose.chmod(0o644)
    loose.unlink()
    fresh = open_tracker(user_repo, clock=clock)  # a process that never read that tree
    with pytest.raises(CommitError, match="could not commit"):
        fresh.close(a.id, "closed while the tree was missing")
    assert '"close_reason":"closed while the tree was missing"' in fresh.path.read_text()
    loose.write_bytes(saved)  # the object back (git fsck would say what was lost)
    fresh.create("second")
    assert '"close_reason":"closed while the tree was missing"' in _head_file(user_repo)
    assert fresh.path.read_text() == _head_file(user_repo)
