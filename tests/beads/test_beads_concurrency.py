"""Several processes on one tracker: claims go to exactly one, nothing is lost, git stays sound."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from cortexgraph.storage.beads import open_tracker

# forkserver, not fork: once a Prefect flow has run in this worker its threads make a forked
# child exit 1 (seen when xdist put a flow test first); children open their own tracker.
CTX = mp.get_context("forkserver")


def _claim_all(store: str, ids: list[str], name: str, barrier, results) -> None:
    tracker = open_tracker(store, search_parents=False)
    barrier.wait()
    for issue_id in ids:
        got = tracker.claim(issue_id, name)
        results.put((issue_id, name if got is not None else None))


def _create_many(store: str, name: str, barrier, results) -> None:
    tracker = open_tracker(store, search_parents=False)
    barrier.wait()
    for i in range(5):
        shared = tracker.create(f"shared finding {i}", dedupe_key=f"shared:{i}")
        own = tracker.create(f"{name} finding {i}", dedupe_key=f"{name}:{i}")
        results.put((shared.id, own.id))


def _run(target, args_for, n: int, expected: int) -> list:
    barrier = CTX.Barrier(n)
    results = CTX.Queue()
    procs = [CTX.Process(target=target, args=(*args_for(k), barrier, results)) for k in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    return [results.get(timeout=10) for _ in range(expected)]


def test_concurrent_claims_give_each_issue_to_exactly_one_process(tmp_path: Path, git_cmd):
    store = tmp_path / "store"
    tracker = open_tracker(store, search_parents=False)
    ids = [tracker.create(f"cluster {i}", labels=["consolidation:cluster"]).id for i in range(6)]

    outcomes = _run(_claim_all, lambda k: (str(store), ids, f"worker-{k}"), 3, 18)

    assert len(outcomes) == 18
    for issue_id in ids:
        winners = [name for i, name in outcomes if i == issue_id and name is not None]
        assert len(winners) == 1, (issue_id, winners)
        assert tracker.get(issue_id).assignee == winners[0]
        assert tracker.get(issue_id).status == "in_progress"
    subjects = git_cmd(store, "log", "--format=%s").splitlines()
    assert sum("claimed by" in s for s in subjects) == 6 and len(subjects) == 12
    git_cmd(store, "fsck", "--strict")


def test_concurrent_creates_lose_nothing_and_dedupe_across_processes(tmp_path: Path, git_cmd):
    store = tmp_path / "store"
    open_tracker(store, search_parents=False)

    outcomes = _run(_create_many, lambda k: (str(store), f"p{k}"), 2, 10)

    tracker = open_tracker(store, search_parents=False)
    issues = tracker.query()
    assert len(issues) == 15  # 5 shared (deduplicated) + 5 per process
    shared_ids = {s for s, _ in outcomes}
    assert len(shared_ids) == 5  # both processes got the same issue for each shared key
    assert len({i.id for i in issues}) == 15
    assert len(git_cmd(store, "log", "--format=%s").splitlines()) == 15
    assert git_cmd(store, "status", "--porcelain") == ""
    git_cmd(store, "fsck", "--strict")
