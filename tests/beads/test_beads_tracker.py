"""BeadsTracker operations and what they leave in git (checked with the real git binary)."""

from __future__ import annotations

import pytest

from cortexgraph.storage.beads import (
    BeadsTracker,
    IssueNotFoundError,
    TrackerUnavailableError,
    open_tracker,
)
from cortexgraph.storage.beads.ids import collision_probability, hash_length, new_issue_id
from cortexgraph.storage.errors import InvalidInputError, NotFoundError

BEADS_FILE = ".beads/issues.jsonl"


def _log(git_cmd, repo) -> list[str]:
    return git_cmd(repo, "log", "--format=%an <%ae>|%s").splitlines()


@pytest.fixture
def tracker(tmp_path, clock) -> BeadsTracker:
    return open_tracker(tmp_path / "store", search_parents=False, clock=clock)


def test_create_query_claim_update_close(tracker):
    a = tracker.create("merge c1", labels=["consolidation:cluster", "action:merge"], priority=1)
    b = tracker.create("review c2", labels=["consolidation:cluster", "action:review"])
    c = tracker.create("decay m7", labels=["consolidation:decay", "urgency:high"])

    assert [i.id for i in tracker.query(labels=["consolidation:cluster"])] == [a.id, b.id]
    assert [i.id for i in tracker.query(labels=["consolidation:cluster", "action:merge"])] == [a.id]
    assert tracker.query(labels=["nope"]) == []

    got = tracker.claim(a.id, "semantic-merge")
    assert got is not None and got.status == "in_progress" and got.assignee == "semantic-merge"
    assert tracker.claim(a.id, "someone-else") is None
    assert tracker.claim(a.id, "semantic-merge") is None  # already taken, even by the same name
    assert [i.id for i in tracker.query(assignee="semantic-merge")] == [a.id]
    assert [i.id for i in tracker.query(status="open")] == [b.id, c.id]

    u = tracker.update(b.id, metadata={"decision": "pending"}, priority=3)
    u = tracker.update(b.id, metadata={"seen_by": "alice"})
    assert u.metadata == {"decision": "pending", "seen_by": "alice"} and u.priority == 3

    closed = tracker.close(a.id, "merged 3 memories")
    assert closed.status == "closed" and closed.close_reason == "merged 3 memories"
    assert closed.closed_at is not None and closed.updated_at == closed.closed_at
    assert tracker.close(a.id, "again") == closed  # idempotent

    reopened = tracker.update(a.id, status="open")
    assert reopened.closed_at is None and reopened.close_reason == ""
    via_update = tracker.update(c.id, status="closed")
    assert via_update.closed_at is not None


def test_dedupe_key_returns_the_existing_issue_in_any_status(tracker, git_cmd):
    first = tracker.create("merge c1", dedupe_key="cluster:c1", metadata={"n": 1})
    again = tracker.create("merge c1 (second run)", dedupe_key="cluster:c1", metadata={"n": 2})
    assert again == first
    tracker.close(first.id, "done")
    assert tracker.create("merge c1", dedupe_key="cluster:c1").id == first.id
    assert len(tracker.query()) == 1
    assert len(_log(git_cmd, tracker.path.parent.parent)) == 2  # opened, closed


def test_one_commit_per_change_with_messages_that_say_what_changed(tracker, git_cmd):
    a = tracker.create("Merge 3 notes on PostgreSQL", labels=["consolidation:cluster"])
    tracker.claim(a.id, "semantic-merge")
    tracker.claim(a.id, "other")  # refused: no commit
    tracker.update(a.id, priority=1)
    tracker.update(a.id, priority=1)  # no change: no commit
    tracker.close(a.id, "merged 3 memories")
    tracker.close(a.id, "merged 3 memories")  # already closed: no commit

    repo = tracker.path.parent.parent
    assert _log(git_cmd, repo) == [
        f"cortexgraph <cortexgraph@localhost>|{a.id}: closed (merged 3 memories)",
        f"cortexgraph <cortexgraph@localhost>|{a.id}: updated priority",
        f"cortexgraph <cortexgraph@localhost>|{a.id}: claimed by semantic-merge",
        f'cortexgraph <cortexgraph@localhost>|{a.id}: opened "Merge 3 notes on PostgreSQL"',
    ]
    for sha in git_cmd(repo, "log", "--format=%H").split():
        files = git_cmd(repo, "show", "--name-only", "--format=", sha).split()
        assert files == [BEADS_FILE]
    assert git_cmd(repo, "status", "--porcelain") == ""
    git_cmd(repo, "fsck", "--strict")
    assert [c.message.splitlines()[0] for c in tracker.history(a.id)][-1].endswith('PostgreSQL"')


def test_works_in_a_user_repo_and_commits_only_its_own_file(user_repo, clock, git_cmd):
    before_head = git_cmd(user_repo, "rev-parse", "HEAD").strip()
    before_status = git_cmd(user_repo, "status", "--porcelain")
    tracker = open_tracker(user_repo / "src", search_parents=True, clock=clock)  # a subfolder
    assert tracker.path == (user_repo / BEADS_FILE).resolve()  # .beads/ at the work tree root
    a = tracker.create("first finding", labels=["consolidation:decay"])
    tracker.close(a.id, "handled")

    log = _log(git_cmd, user_repo)
    assert len(log) == 4 and log[2:] == [
        "Alice <alice@example.com>|second",
        "Alice <alice@example.com>|initial",
    ]
    assert git_cmd(user_repo, "rev-parse", "HEAD~2").strip() == before_head
    assert git_cmd(user_repo, "status", "--porcelain") == before_status  # user's work untouched
    assert git_cmd(user_repo, "diff", "--cached", "--name-only").split() == ["staged.txt"]
    assert "work in progress" in (user_repo / "README.md").read_text()
    assert git_cmd(user_repo, "show", "HEAD:src/app.py") == "print('v2')\n"
    assert git_cmd(user_repo, "ls-tree", "-r", "--name-only", "HEAD").split() == [
        BEADS_FILE,
        "README.md",
        "src/app.py",
    ]
    git_cmd(user_repo, "fsck", "--strict")
    # the user's own next commit neither reverts nor re-adds our file
    git_cmd(user_repo, "commit", "-q", "-m", "user commits staged work")
    assert git_cmd(user_repo, "show", "--name-only", "--format=", "HEAD").split() == ["staged.txt"]
    assert tracker.get(a.id).status == "closed"


def test_fresh_repository_without_commits_or_identity(tmp_path, clock, git_cmd):
    repo = tmp_path / "empty"
    repo.mkdir()
    git_cmd(repo, "init", "-q")
    tracker = open_tracker(repo, clock=clock)
    tracker.create("first")
    assert len(_log(git_cmd, repo)) == 1
    git_cmd(repo, "fsck", "--strict")


def test_storage_dir_gets_its_own_repository_even_inside_another(user_repo, clock, git_cmd):
    store = user_repo / "data" / "stm"
    tracker = open_tracker(store, search_parents=False, clock=clock)
    tracker.create("in its own repo")
    assert (store / ".git").is_dir()
    assert len(_log(git_cmd, store)) == 1
    assert len(_log(git_cmd, user_repo)) == 2  # the project's history is untouched


def test_unusable_locations_raise_tracker_unavailable(tmp_path, git_cmd):
    bare = tmp_path / "bare.git"
    bare.mkdir()
    git_cmd(bare, "init", "-q", "--bare")
    with pytest.raises(TrackerUnavailableError):
        open_tracker(bare, search_parents=False)
    with pytest.raises(TrackerUnavailableError):
        open_tracker(tmp_path / "missing", init=False)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(TrackerUnavailableError):
        open_tracker(plain, search_parents=False, init=False)


def test_bad_input_and_unknown_ids(tracker):
    with pytest.raises(InvalidInputError):
        tracker.create("")
    with pytest.raises(InvalidInputError):
        tracker.create("x", priority=7)
    with pytest.raises(InvalidInputError):
        tracker.create("x", labels="a,b")
    a = tracker.create("x")
    with pytest.raises(InvalidInputError):
        tracker.update(a.id, status="done")
    with pytest.raises(InvalidInputError):
        tracker.update(a.id, created_at="now")
    with pytest.raises(InvalidInputError):
        tracker.claim(a.id, "")
    with pytest.raises(IssueNotFoundError):
        tracker.close("cg-zzzz", "no")
    with pytest.raises(NotFoundError):
        tracker.claim("cg-zzzz", "me")
    assert tracker.find(a.id.split("-", 1)[1]) == a  # the hash alone finds it
    assert tracker.query() == [a]


def test_id_length_grows_with_the_issue_count():
    lengths = [hash_length(n) for n in (0, 100, 1_000, 10_000, 100_000, 10**7)]
    assert lengths == sorted(lengths) and lengths[0] == 3 and lengths[-1] == 8
    for n in (0, 100, 1_000, 10_000, 100_000):
        assert collision_probability(n + 1, hash_length(n)) <= 0.25
        if hash_length(n) > 3:
            assert collision_probability(n + 1, hash_length(n) - 1) > 0.25


def test_a_colliding_id_is_never_reused():
    taken: set[str] = set()
    for _ in range(200):  # same seed every time: only the nonce/length fallback avoids reuse
        taken.add(new_issue_id("cg", "same seed", taken, 0))
    assert len(taken) == 200


def test_a_tracker_pickles_to_another_process_by_path(tmp_path):
    import pickle

    tracker = open_tracker(tmp_path / "store", search_parents=False)
    a = tracker.create("ship me")
    clone = pickle.loads(pickle.dumps(tracker))
    assert clone.path == tracker.path and clone.get(a.id) == a
    assert pickle.loads(pickle.dumps(a)) == a


def test_changes_start_no_process(tmp_path, git_cmd, monkeypatch):
    import subprocess

    import git.cmd

    repo = tmp_path / "r"
    repo.mkdir()
    git_cmd(repo, "init", "-q")

    def refuse(*args, **kwargs):
        raise AssertionError(f"a process was started: {args[:1]}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(git.cmd, "safer_popen", refuse)
    tracker = open_tracker(repo)
    a = tracker.create("pure python")
    tracker.claim(a.id, "w")
    tracker.close(a.id, "ok")
    assert len(tracker.history(a.id)) == 3


def test_reading_issues_opens_no_git_and_the_first_change_commits(tmp_path, git_cmd):
    """GitPython (0.05 s to import) is loaded by the first commit, not by opening the tracker:
    a process that only reads issues never pays for it. Run in a fresh interpreter, since this
    one has imported git already."""
    import subprocess
    import sys

    store = tmp_path / "store"
    made = open_tracker(store, search_parents=False).create("before", labels=["kept"])
    script = f"""
import sys
from cortexgraph.storage.beads import open_tracker
for parents, where in ((False, {str(store)!r}), (True, {str(store / ".beads")!r})):
    tracker = open_tracker(where, search_parents=parents)
    assert [i.id for i in tracker.query(labels=["kept"])] == [{made.id!r}], parents
    assert tracker.get({made.id!r}).title == "before"
    assert "git" not in sys.modules, "opening and reading imported GitPython"
tracker.close({made.id!r}, "done")
assert "git" in sys.modules
print(len(tracker.history({made.id!r})))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2"]
    log = git_cmd(store, "log", "--format=%s").splitlines()
    assert log[0] == f"{made.id}: closed (done)" and len(log) == 2
    assert git_cmd(store, "status", "--porcelain") == ""


def test_a_worktree_or_bare_setting_is_left_to_gitpython(tmp_path, git_cmd):
    """Only a plain ``.git`` folder is found without GitPython; a bare repository is still
    refused when the tracker opens, as before."""
    from cortexgraph.storage.beads.git_repo import find_repo

    plain = tmp_path / "plain"
    plain.mkdir()
    git_cmd(plain, "init", "-q")
    found = find_repo(plain, search_parents=False)
    assert found is not None and found.root == plain and found.git_dir == plain / ".git"
    assert find_repo(plain / "sub", search_parents=True) == found
    assert find_repo(plain / "sub", search_parents=False) is None

    git_cmd(plain, "config", "core.bare", "true")
    assert find_repo(plain, search_parents=False) is None
    with pytest.raises(TrackerUnavailableError):
        open_tracker(plain, search_parents=False, init=False)

    worktree = tmp_path / "wt"
    (worktree / ".git").parent.mkdir()
    (worktree / ".git").write_text("gitdir: ../plain/.git\n")
    assert find_repo(worktree, search_parents=False) is None
