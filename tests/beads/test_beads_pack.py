"""Packing the loose objects our commits write (storage/beads/pack.py), in real repositories."""

from __future__ import annotations

import json
import logging
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cortexgraph.cli.issues_cmd import app
from cortexgraph.storage.beads import BeadsTracker, open_tracker
from cortexgraph.storage.beads.commit_log import own_commits
from cortexgraph.storage.beads.pack import read_counter

BEADS_FILE = ".beads/issues.jsonl"
NEVER = 10**12  # bytes of loose objects no test writes


def _loose(git_dir: Path) -> list[Path]:
    objects = git_dir / "objects"
    return [
        f
        for d in objects.iterdir()
        if re.fullmatch(r"[0-9a-f]{2}", d.name)
        for f in d.iterdir()
        if re.fullmatch(r"[0-9a-f]{38}", f.name)
    ]


def _packs(git_dir: Path) -> list[Path]:
    folder = git_dir / "objects" / "pack"
    return sorted(folder.glob("pack-*.pack")) if folder.is_dir() else []


def _git_dir(tracker: BeadsTracker) -> Path:
    return Path(tracker.repo.git_dir)


def _counter(tracker: BeadsTracker) -> int:
    return read_counter(_git_dir(tracker) / "cortexgraph-beads.loose")


def _work(tracker: BeadsTracker, n: int) -> None:
    """What a run does to the file: opens issues, claims and closes most of them."""
    for i in range(n):
        issue = tracker.create(f"merge cluster {i}", labels=["consolidation:cluster"])
        if i % 4:
            tracker.claim(issue.id, "semantic-merge")
            tracker.close(issue.id, f"merged {i}")


def _check_history(tracker: BeadsTracker, git_cmd) -> None:
    """Every commit's tree reads back through this process's GitPython (and git fsck agrees);
    HEAD's issue file is the work tree's, byte for byte."""
    repo = tracker.repo
    commits = list(repo.iter_commits())
    for commit in commits:
        for item in commit.tree.traverse():
            if item.type == "blob":
                assert len(item.data_stream.read()) == item.size
    head_blob = repo.head.commit.tree / BEADS_FILE
    assert head_blob.data_stream.read() == tracker.path.read_bytes()
    root = Path(repo.working_tree_dir)
    assert git_cmd(root, "fsck", "--full", "--no-dangling").strip() == ""
    assert git_cmd(root, "rev-list", "--count", "HEAD").strip() == str(len(commits))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


def test_below_the_threshold_nothing_is_packed_and_the_counter_is_exact(store, clock):
    tracker = open_tracker(store, search_parents=False, clock=clock, pack_threshold=NEVER)
    _work(tracker, 6)
    git_dir = _git_dir(tracker)
    loose = _loose(git_dir)
    assert loose and _packs(git_dir) == []
    # a fresh repository holds only our commits' objects: the counter is their size on disk
    assert _counter(tracker) == sum(f.stat().st_size for f in loose)


def test_passing_the_threshold_packs_and_the_same_process_reads_on(store, clock, git_cmd):
    tracker = open_tracker(store, search_parents=False, clock=clock, pack_threshold=NEVER)
    _work(tracker, 6)
    git_dir = _git_dir(tracker)
    commits_before = len(list(tracker.repo.iter_commits()))
    counted = _counter(tracker)

    # the same store, a threshold the next commit passes; the first tracker stays open
    packing = open_tracker(store, search_parents=False, clock=clock, pack_threshold=counted + 1)
    shipped = open_tracker(store, search_parents=False, pack_threshold=counted + 1)
    assert pickle.loads(pickle.dumps(shipped))._committer.pack_threshold == counted + 1
    packing.create("one more")
    assert _loose(git_dir) == [] and len(_packs(git_dir)) == 1
    assert _counter(packing) == 0
    _check_history(packing, git_cmd)
    assert len(list(packing.repo.iter_commits())) == commits_before + 1

    # the packing tracker commits and reads on; so does the one that was open all along,
    # whose objects it had read loose are now in a pack it had not seen
    _work(packing, 2)
    _check_history(packing, git_cmd)
    _work(tracker, 2)
    assert tracker.history(limit=1)[0].sha == tracker.repo.head.commit.hexsha
    _check_history(tracker, git_cmd)
    assert _counter(packing) > 0 and _loose(git_dir)  # counting again, below the threshold


def test_packs_stay_few(store, clock, git_cmd):
    tracker = open_tracker(store, search_parents=False, clock=clock, pack_threshold=1)
    _work(tracker, 12)  # a pack after every commit: 33 of them
    assert _loose(_git_dir(tracker)) == []
    assert len(_packs(_git_dir(tracker))) <= 6  # merged as they come (--geometric), not 33
    _check_history(tracker, git_cmd)


def test_a_failed_pack_leaves_the_commit_and_is_tried_again(store, clock, git_cmd, caplog):
    tracker = open_tracker(store, search_parents=False, clock=clock, pack_threshold=NEVER)
    first = tracker.create("first")
    git_dir = _git_dir(tracker)
    pack_dir = git_dir / "objects" / "pack"
    pack_dir.rmdir()
    pack_dir.write_text("not a folder: git cannot write a pack here\n")  # as a full disk would

    failing = open_tracker(store, search_parents=False, clock=clock, pack_threshold=1)
    with caplog.at_level(logging.WARNING, logger="cortexgraph.storage.beads.pack"):
        second = failing.create("second")
    assert "could not pack" in caplog.text
    assert [i.id for i in failing.query()] == [first.id, second.id]
    head = failing.repo.head.commit
    assert head.message.startswith(f"{second.id}: opened")
    assert (head.tree / BEADS_FILE).data_stream.read() == failing.path.read_bytes()
    assert _counter(failing) == 0 and _loose(git_dir)  # counted afresh; the objects stay

    pack_dir.unlink()
    pack_dir.mkdir()
    failing.close(second.id, "done")  # past the threshold again: tried again, and packs
    assert _counter(failing) == 0 and _loose(git_dir) == [] and len(_packs(git_dir)) == 1
    _check_history(failing, git_cmd)


def test_a_pack_that_keeps_failing_is_not_tried_at_every_commit(store, clock, caplog):
    """After a failure the next try waits for another threshold of writes: a repository git
    refuses (another owner's, say) must not start a doomed git and warn on every commit."""
    tracker = open_tracker(store, search_parents=False, clock=clock, pack_threshold=NEVER)
    tracker.create("first")
    one_commit = _counter(tracker)  # the loose bytes one small commit writes
    pack_dir = _git_dir(tracker) / "objects" / "pack"
    pack_dir.rmdir()
    pack_dir.write_text("not a folder: git cannot write a pack here\n")

    failing = open_tracker(store, search_parents=False, clock=clock, pack_threshold=3 * one_commit)
    tries = []
    with caplog.at_level(logging.WARNING, logger="cortexgraph.storage.beads.pack"):
        for k in range(8):
            failing.create(f"issue {k}")
            tries.append(caplog.text.count("could not pack"))
    assert 1 <= tries[-1] <= 4, tries  # about one try in three commits, not eight
    assert tries[-1] < len(tries)


def test_without_git_the_commit_stands(store, clock, tmp_path, monkeypatch, caplog):
    tracker = open_tracker(store, search_parents=False, clock=clock, pack_threshold=1)
    tracker.create("first")  # packs: git is there
    no_git = tmp_path / "bin"
    no_git.mkdir()
    monkeypatch.setenv("PATH", str(no_git))  # GitPython runs git by name: now found nowhere
    with caplog.at_level(logging.WARNING, logger="cortexgraph.storage.beads.pack"):
        second = tracker.create("second")
    assert "could not pack" in caplog.text
    assert tracker.repo.head.commit.message.startswith(f"{second.id}: opened")
    assert _counter(tracker) == 0 and _loose(_git_dir(tracker))  # tried again later


def test_packing_a_persons_repository_keeps_their_objects_reflog_and_index(
    user_repo, tmp_path, clock, git_cmd
):
    draft = tmp_path / "draft.txt"
    draft.write_text("a draft\n")
    dangling = git_cmd(user_repo, "hash-object", "-w", str(draft))  # in no commit
    reflog = git_cmd(user_repo, "reflog", "--format=%H %gs").splitlines()
    status = git_cmd(user_repo, "status", "--porcelain")

    tracker = open_tracker(user_repo, clock=clock, pack_threshold=1)
    issue = tracker.create("merge c1")
    assert _loose(user_repo / ".git") == [] and _packs(user_repo / ".git")

    assert git_cmd(user_repo, "cat-file", "-p", dangling.strip()) == "a draft\n"
    after = git_cmd(user_repo, "reflog", "--format=%H %gs").splitlines()
    assert after[-len(reflog) :] == reflog and len(after) == len(reflog) + 1
    assert git_cmd(user_repo, "status", "--porcelain") == status  # their work, as it was
    assert git_cmd(user_repo, "log", "-1", "--format=%s").startswith(f"{issue.id}: opened")
    assert git_cmd(user_repo, "show", "HEAD~1:src/app.py") == "print('v2')\n"
    _check_history(tracker, git_cmd)


def test_issues_pack_command(store, clock, monkeypatch, git_cmd):
    monkeypatch.setenv("CORTEXGRAPH_STORAGE_PATH", str(store))
    monkeypatch.delenv("CORTEXGRAPH_BEADS_REPO", raising=False)
    tracker = open_tracker(store, search_parents=False, clock=clock, pack_threshold=NEVER)
    _work(tracker, 8)
    git_dir = _git_dir(tracker)

    result = CliRunner().invoke(app, ["pack", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["bytes_after"] < report["bytes_before"]
    assert _loose(git_dir) == [] and len(_packs(git_dir)) == 1 and _counter(tracker) == 0
    _check_history(tracker, git_cmd)

    plain = CliRunner().invoke(app, ["pack"])
    assert plain.exit_code == 0 and " MB -> " in plain.stdout


def test_a_repository_set_to_write_bitmaps_is_packed_too(user_repo, clock, git_cmd, caplog):
    """``repack.writeBitmaps`` (a person's or a global setting) makes git refuse an
    incremental repack; ours writes no bitmap, so it packs there as anywhere else."""
    git_cmd(user_repo, "repack", "-a", "-d", "-q")  # their pack; bitmaps need one
    git_cmd(user_repo, "config", "repack.writeBitmaps", "true")
    tracker = open_tracker(user_repo, clock=clock, pack_threshold=1)
    with caplog.at_level(logging.WARNING, logger="cortexgraph.storage.beads.pack"):
        tracker.create("merge c1")
    assert "could not pack" not in caplog.text
    assert _loose(user_repo / ".git") == [] and _counter(tracker) == 0
    _check_history(tracker, git_cmd)


def test_a_walk_of_the_history_reads_on_when_another_process_packs_during_it(store, clock):
    """A reader (``issues show``) looked at the repository, then another process packed,
    then the reader walks the commits: git deleted the loose objects it had found, and the
    packs that hold them now are not in gitdb's list."""
    tracker = open_tracker(store, search_parents=False, clock=clock, pack_threshold=NEVER)
    _work(tracker, 4)
    reader = open_tracker(store, search_parents=False, pack_threshold=NEVER)
    repo = reader.repo  # its pack list is read here; the walk comes after the pack
    before = own_commits(repo, reader.identity.email)
    packer = "from cortexgraph.storage.beads import open_tracker; open_tracker(%r).pack()"
    subprocess.run([sys.executable, "-c", packer % str(store)], check=True)
    assert _loose(_git_dir(tracker)) == [] and len(_packs(_git_dir(tracker))) == 1
    assert own_commits(repo, reader.identity.email) == before


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads Linux's /proc")
def test_a_long_lived_process_lets_go_of_the_packs_git_deleted(store, clock):
    """gitdb maps the packs it reads; the packs a repack merged are deleted, and a process
    that keeps its tracker (the MCP server) must not keep them mapped: their disk space would
    stay taken while it runs (gitdb unmaps only past 8 GB of mappings)."""
    tracker = open_tracker(store, search_parents=False, clock=clock, pack_threshold=1)
    other = open_tracker(store, search_parents=False, clock=clock, pack_threshold=1)
    for i in range(6):  # each packs, merging the packs before; each reads the last one
        (tracker if i % 2 else other).create(f"merge cluster {i}")
    assert len(tracker.history()) == 6 and len(other.history()) == 6
    maps = Path("/proc/self/maps").read_text().splitlines()
    held = [line for line in maps if str(store) in line and line.endswith("(deleted)")]
    assert held == []
    assert any(str(store) in line for line in maps)  # the packs in use are mapped
