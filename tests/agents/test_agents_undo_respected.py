"""An undo is a decision the agents respect until the memory changes again (issue 30, Medium
7): after unpromote, undo merge and undo gc, the next run does not redo it; once the memory is
used again it is judged like any other."""

from __future__ import annotations

from dataclasses import replace

from cortexgraph.agents.ltm_promoter import LTMPromoter
from cortexgraph.agents.undo import collect_garbage, unarchive
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.decay import DAY
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.vault_sync.unpromote import unpromote_memory

NOW = 1_760_000_000.0


def test_gc_does_not_archive_again_what_a_person_took_back_until_it_is_used(tmp_path):
    store = InMemoryStore()
    m = store.save("a fading detail about fax machines", now=NOW - 90 * DAY)
    collect_garbage(store, [m.id], delete=False, now=NOW, grace_days=7)
    assert store.get(m.id).status is MemoryStatus.ARCHIVED
    unarchive(store, m.id, now=NOW + 10)
    again = collect_garbage(store, [m.id], delete=False, now=NOW + DAY, grace_days=7)
    assert again.archived == () and store.get(m.id).status is MemoryStatus.ACTIVE
    store.touch(m.id, now=NOW + 2 * DAY)  # used again: the undo no longer speaks for it
    later = collect_garbage(store, [m.id], delete=False, now=NOW + 3 * DAY, grace_days=7)
    assert later.archived == (m.id,)


def test_the_promoter_does_not_promote_again_what_a_person_unpromoted(tmp_path):
    store = InMemoryStore()
    m = store.save("we deploy with blue-green switches", now=NOW - DAY)
    store.put(replace(store.get(m.id), use_count=20, last_used=int(NOW - 60)))
    promoter = LTMPromoter(store, sink=None)
    assert [c.id for c, _ in promoter.candidates(NOW)] == [m.id]
    store.update(m.id, status=MemoryStatus.PROMOTED)
    (tmp_path / "vault").mkdir()
    unpromote_memory(store, tmp_path / "vault", m.id, now=NOW)
    assert promoter.candidates(NOW + 60) == []
    store.touch(m.id, now=NOW + 120)
    assert [c.id for c, _ in promoter.candidates(NOW + 180)] == [m.id]


def _merge_twins(store):
    from cortexgraph.agents.cluster_detector import Cluster, ClusterAction, cluster_id_for
    from cortexgraph.agents.semantic_merge import SemanticMerge

    a = store.save("The ledger uses PostgreSQL on db-1", tags=["db"], now=NOW - DAY)
    b = store.save("the ledger uses postgresql, replicas on db-2", tags=["db"], now=NOW - DAY)
    ids = (a.id, b.id)
    cluster = Cluster(cluster_id_for(ids), ids, 0.9, ClusterAction.MERGE)
    return a, b, cluster, SemanticMerge(store)


def test_a_merge_a_person_undid_is_not_redone_until_a_source_is_used(tmp_path):
    from cortexgraph.agents.undo import undo_merge_of

    store = InMemoryStore()
    a, b, cluster, merge = _merge_twins(store)
    (first,) = merge.run(now=NOW, clusters=[cluster]).outcomes
    assert first.status == "merged"
    undo_merge_of(store, first.merged_id, now=NOW + 10)
    (again,) = merge.run(now=NOW + 20, clusters=[cluster]).outcomes
    assert again.status != "merged"
    assert {store.get(a.id).status, store.get(b.id).status} == {MemoryStatus.ACTIVE}
    store.touch(a.id, now=NOW + 30)
    store.touch(b.id, now=NOW + 30)
    (later,) = merge.run(now=NOW + 40, clusters=[cluster]).outcomes
    assert later.status == "merged"


def test_a_forged_merge_record_cannot_make_undo_archive_an_unrelated_memory(tmp_path):
    import pytest

    from cortexgraph.agents.common import AgentError
    from cortexgraph.agents.merge_ops import PROVENANCE_KEY
    from cortexgraph.agents.undo import undo_merge_of

    store = InMemoryStore()
    victim = store.save("an unrelated active memory", now=NOW)
    forged = {"sources": [{"id": victim.id, "status": "archived"}], "repointed": []}
    made = store.save("imported, claims to be a merge", extra={PROVENANCE_KEY: forged}, now=NOW)
    with pytest.raises(AgentError, match="not merged into it"):
        undo_merge_of(store, made.id, now=NOW + 1)
    assert store.get(victim.id).status is MemoryStatus.ACTIVE and made.id in store
    damaged = store.save("damaged record", extra={PROVENANCE_KEY: {"sources": [7]}}, now=NOW)
    with pytest.raises(AgentError, match="damaged"):
        undo_merge_of(store, damaged.id, now=NOW + 1)
