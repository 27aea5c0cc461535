"""Both trackers keep the IssueTracker contract the agents rely on, end to end."""

from __future__ import annotations

from contextlib import nullcontext

import pytest

from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.agents.protocols import IssueTracker, IssueView
from cortexgraph.storage.beads import open_tracker
from cortexgraph.storage.errors import InvalidInputError, NotFoundError


@pytest.fixture(params=["beads", "memory"])
def tracker(request, tmp_path, clock):
    if request.param == "memory":
        return InMemoryIssueTracker()
    return open_tracker(tmp_path / "store", search_parents=False, clock=clock)


def _cluster_detector(tracker, clusters):
    """What ClusterDetector does: one issue per merge or review cluster, deduplicated."""
    for cid, (action, ids) in clusters.items():
        tracker.create(
            f"{action.title()}: {len(ids)} memories (cluster {cid})",
            labels=["consolidation:cluster", f"action:{action}"],
            priority=1 if action == "merge" else 2,
            metadata={"cluster_id": cid, "memory_ids": ids, "action": action},
            dedupe_key=f"cluster:{cid}",
        )


def _semantic_merge(tracker, name="semantic-merge"):
    """What SemanticMerge does: claim open merge issues, do the work, close them."""
    merged = []
    for issue in tracker.query(labels=["consolidation:cluster", "action:merge"], status="open"):
        if tracker.claim(issue.id, name) is None:
            continue
        ids = list(issue.metadata["memory_ids"])
        tracker.update(issue.id, metadata={"merged_into": "m-new"})
        tracker.close(issue.id, f"merged {len(ids)} memories")
        merged.append(issue.id)
    return merged


def test_tracker_satisfies_the_protocol(tracker):
    assert isinstance(tracker, IssueTracker)
    issue = tracker.create("x", labels=["a"], metadata={"k": 1})
    assert isinstance(issue, IssueView)
    assert (issue.title, issue.status, issue.labels, issue.assignee) == ("x", "open", ("a",), None)
    assert issue.metadata["k"] == 1


def test_cluster_issues_flow_from_detector_to_merge_agent(tracker):
    clusters = {
        "c1": ("merge", ["m1", "m2", "m3"]),
        "c2": ("review", ["m4", "m5"]),
        "c3": ("merge", ["m6", "m7"]),
    }
    _cluster_detector(tracker, clusters)
    _cluster_detector(tracker, clusters)  # a second pipeline run opens nothing new
    assert len(tracker.query(labels=["consolidation:cluster"])) == 3

    merged = _semantic_merge(tracker)
    assert len(merged) == 2
    assert _semantic_merge(tracker) == []  # nothing left to take

    closed = tracker.query(status="closed")
    assert sorted(i.metadata["cluster_id"] for i in closed) == ["c1", "c3"]
    assert all(i.metadata["merged_into"] == "m-new" for i in closed)
    review = tracker.query(labels=["action:review"])
    assert [i.status for i in review] == ["open"]  # left for a person to decide


def test_shared_rules(tracker):
    a = tracker.create("a", dedupe_key="k")
    assert tracker.create("b", dedupe_key="k").id == a.id
    assert tracker.claim(a.id, "w1").assignee == "w1"
    assert tracker.claim(a.id, "w2") is None
    assert tracker.update(a.id, labels=["x", "x", " y "]).labels == ("x", "y")
    closed = tracker.close(a.id, "done")
    assert tracker.close(a.id, "other reason") == closed
    with pytest.raises(InvalidInputError):
        tracker.update(a.id, bogus=1)
    with pytest.raises(InvalidInputError):
        tracker.create("c", priority=9)
    with pytest.raises(NotFoundError):
        tracker.close("nope-1", "x")


@pytest.mark.parametrize("batched", [False, True], ids=["one-commit-each", "batch"])
def test_a_changed_dedupe_key_is_found_under_the_new_key_not_the_old(tracker, batched):
    """Re-keying by ``update(metadata=...)``: the key's holder is the first issue in order
    still carrying it, in a batch as outside one (its index once kept the old key)."""
    if batched and not hasattr(tracker, "batch"):
        pytest.skip("the in-memory tracker has no batches")
    with tracker.batch("test") if batched else nullcontext():
        a = tracker.create("a", dedupe_key="k:old")
        b = tracker.create("b")
        tracker.update(a.id, metadata={"dedupe_key": "k:new"})
        assert tracker.create("again", dedupe_key="k:new").id == a.id
        fresh = tracker.create("fresh", dedupe_key="k:old")
        assert fresh.id not in (a.id, b.id)
        # a later issue given a held key does not take it from its first holder ...
        tracker.update(b.id, metadata={"dedupe_key": "k:new"})
        assert tracker.create("again", dedupe_key="k:new").id == a.id
        # ... until that holder lets it go
        tracker.update(a.id, metadata={"dedupe_key": None})
        assert tracker.create("again", dedupe_key="k:new").id == b.id
        assert tracker.create("again", dedupe_key="k:old").id == fresh.id


@pytest.mark.parametrize("batched", [False, True], ids=["one-commit-each", "batch"])
def test_a_key_given_only_in_metadata_is_held_as_a_dedupe_key(tracker, batched):
    """``metadata={"dedupe_key": ...}`` without ``dedupe_key=``: the issue holds the key (a
    later create with it finds the issue) but is never folded into an earlier holder."""
    if batched and not hasattr(tracker, "batch"):
        pytest.skip("the in-memory tracker has no batches")
    with tracker.batch("test") if batched else nullcontext():
        a = tracker.create("a", metadata={"dedupe_key": "k:meta"})
        assert tracker.create("again", dedupe_key="k:meta").id == a.id
        b = tracker.create("b", metadata={"dedupe_key": "k:meta"})
        assert b.id != a.id
        assert tracker.create("again", dedupe_key="k:meta").id == a.id
