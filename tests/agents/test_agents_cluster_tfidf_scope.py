"""An incremental cluster run without embeddings judges pairs as a full run does (issue 32).

Without an embedding model (``--no-embeddings``, ``CORTEXGRAPH_ENABLE_EMBEDDINGS=false``, or a
model that fails to load) similarity is TF-IDF, whose weights are the corpus's: a full run fits
it on every active memory. An incremental run that fitted it on the changed memories'
neighbourhood alone weighed their words by a dozen texts, and linked them otherwise.
"""

from __future__ import annotations

from cortexgraph.agents.cluster_detector import ClusterDetector
from cortexgraph.demo_data import seed_store
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.models import MemoryStatus

NOW = 1_760_000_000.0


def _touching(report, memory_id):
    return {(c.memory_ids, c.action) for c in report.clusters if memory_id in c.memory_ids}


def test_a_changed_memory_clusters_as_in_a_full_run_on_tfidf():
    store = InMemoryStore()
    seed_store(store, now=NOW)  # the demo's six weeks: restatements among 300 memories
    detector = ClusterDetector(store, None, None)
    full = detector.run(now=NOW, dry_run=True)
    # The demo's restatement of the on-call rota, three times, among others.
    assert any(len(c.memory_ids) > 2 for c in full.clusters)
    active = {m.id for m in store.list(status=MemoryStatus.ACTIVE)}
    for cluster in full.clusters:
        for memory_id in cluster.memory_ids:
            assert memory_id in active
            one = detector.run(now=NOW, dry_run=True, scope={memory_id})
            assert _touching(one, memory_id) == _touching(full, memory_id)
