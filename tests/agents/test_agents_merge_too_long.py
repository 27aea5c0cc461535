"""A cluster whose merged text would pass the store's size limit.

Each source fits, their union does not: the merge failed with the store's words for a save,
"content is 1,177 bytes; the limit is 1,000 (CORTEXGRAPH_MAX_CONTENT_BYTES). Split it into
smaller memories.", which names no merge and no memory, and a preview had shown the merge as
fine. The refusal now names the merge, its memories, the merged length and the limit, and what
to do; nothing is written, and the run goes on with the other clusters.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cortexgraph.agents.cluster_detector import Cluster, ClusterAction
from cortexgraph.agents.common import LABEL_CLUSTER
from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.agents.merge_ops import plan_merge
from cortexgraph.agents.semantic_merge import SemanticMerge
from cortexgraph.storage import open_store
from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.errors import ContentTooLargeError
from cortexgraph.storage.models import MemoryStatus

NOW = 1_760_000_000.0
LIMIT = 1_000
LONG_A = "Billing invoices are stored in PostgreSQL. " + " ".join(
    f"Fact number {i} about the alpha ledger." for i in range(15)
)
LONG_B = "Billing invoices are stored in PostgreSQL. " + " ".join(
    f"Other point {i} about the beta system." for i in range(15)
)


def _cluster(cid: str, *ids: str) -> Cluster:
    return Cluster(cid, tuple(ids), 0.9, ClusterAction.MERGE)


def _store(tmp_path: Path):  # type: ignore[no-untyped-def]
    return open_store(tmp_path / "stm", StoreConfig(max_content_bytes=LIMIT))


def test_a_merge_past_the_content_limit_says_so_and_the_run_goes_on(tmp_path: Path) -> None:
    store = _store(tmp_path)
    a, b = store.save(LONG_A, now=NOW), store.save(LONG_B, now=NOW)
    c, d = store.save("Standup is at 9:30", now=NOW), store.save("standup is at 9:30.", now=NOW)
    merged_len = len(plan_merge([a, b], 0.9, NOW, 0.2, 0.8).memory.content.encode())
    assert len(LONG_A) < LIMIT and len(LONG_B) < LIMIT < merged_len
    tracker = InMemoryIssueTracker()
    issue = tracker.create(
        "merge",
        labels=[LABEL_CLUSTER, "action:merge"],
        metadata={"memory_ids": [a.id, b.id], "cohesion": 0.9, "cluster_id": "c-big"},
    )
    report = SemanticMerge(store, tracker).run(
        now=NOW + 10, clusters=[_cluster("c-ok", c.id, d.id)]
    )
    by_cluster = {o.cluster_id: o for o in report.outcomes}
    big, ok = by_cluster["c-big"], by_cluster["c-ok"]
    assert ok.status == "merged"
    assert big.status == "refused"
    reason = big.reason
    assert "merg" in reason and a.id in reason and b.id in reason, reason
    assert f"{merged_len:,} bytes" in reason and f"{LIMIT:,}" in reason, reason
    assert "CORTEXGRAPH_MAX_CONTENT_BYTES" in reason and "link" in reason, reason
    assert "Split it into smaller memories" not in reason
    # Nothing lost: the sources are as they were, the issue untouched, open for a person.
    assert [store.get(m.id).content for m in (a, b)] == [LONG_A, LONG_B]
    assert {store.get(a.id).status, store.get(b.id).status} == {MemoryStatus.ACTIVE}
    assert len(store.list()) == 5  # the four, and the small pair's merged memory
    again = tracker.get(issue.id)
    assert again.status == "open" and again.assignee is None


def test_the_preview_of_such_a_merge_says_it_would_be_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    a, b = store.save(LONG_A, now=NOW), store.save(LONG_B, now=NOW)
    report = SemanticMerge(store).run(now=NOW, dry_run=True, clusters=[_cluster("c", a.id, b.id)])
    (o,) = report.outcomes
    assert o.status == "refused" and "CORTEXGRAPH_MAX_CONTENT_BYTES" in o.reason


def test_the_refusal_is_typed_and_names_the_context_too(tmp_path: Path) -> None:
    from cortexgraph.agents.merge_ops import MergeTooLargeError

    store = open_store(tmp_path / "stm", StoreConfig(max_context_chars=100))
    a = store.save("The ledger uses PostgreSQL.", context="x " * 40, now=NOW)
    b = store.save("the ledger uses postgresql!", context="y " * 40, now=NOW)
    with pytest.raises(MergeTooLargeError) as info:
        plan_merge([a, b], 0.9, NOW, 0.2, 0.8, limits=store.config)
    assert isinstance(info.value, ContentTooLargeError)
    assert "context" in str(info.value) and "CORTEXGRAPH_MAX_CONTEXT_CHARS" in str(info.value)


@pytest.mark.parametrize("mode", ["previewed", "merged"])
def test_an_outcome_names_its_sources_in_the_clusters_order(tmp_path: Path, mode: str) -> None:
    """Planning before the claim must not reorder what an outcome reports: the cluster's
    order, not the merge's oldest-first reading order."""
    store = _store(tmp_path)
    old = store.save("Standup is at 9:30", now=NOW - 100)
    new = store.save("standup is at 9:30.", now=NOW)
    merge = SemanticMerge(store)
    report = merge.run(
        now=NOW + 10, dry_run=mode == "previewed", clusters=[_cluster("c", new.id, old.id)]
    )
    (o,) = report.outcomes
    assert o.status == mode and o.source_ids == (new.id, old.id)
