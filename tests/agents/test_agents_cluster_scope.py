"""An incremental cluster run's neighbourhood (agents.cluster_scope), compared block by block.

The reference is the comparison as a whole: every changed row against the whole store in one
matrix, each row's ``per_row + 1`` strongest at the bar (ties: the lower column).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from fakes import HashingEmbedder

from cortexgraph.agents.cluster_scope import neighbourhood
from cortexgraph.agents.vectors import tfidf_vectors, vectorize
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.embedding_cache import EmbeddingCache

EPS = 1e-5
TOPICS = ["ledger postgres", "billing queue kafka", "standup nine", "deploy tuesday", "alice bob"]


def _memories(n: int) -> list:
    store = InMemoryStore()
    for k in range(n):
        # Repeated texts tie exactly; shared topic words make neighbours at many strengths.
        topic = TOPICS[k % len(TOPICS)]
        text = f"{topic} note" if k % 7 == 0 else f"{topic} item {k % 11} detail {k % 3}"
        store.save(text, now=1_760_000_000.0 + k)
    return sorted(store.list(), key=lambda m: m.id)


def _reference(memories, scope, embedder, *, bar, per_row):
    """(the memories that must join, those that may): each changed row's ``per_row + 1``
    strongest at the bar, from one matrix; within ``EPS`` of a row's cut (two copies of one
    text, or texts as near to it) either may join: a matrix product in other shapes or threads
    rounds their similarities apart."""
    rows = [k for k, m in enumerate(memories) if m.id in scope]
    texts = [m.content for m in memories]
    if embedder is None:
        sparse = tfidf_vectors(texts).sparse
        sims = np.asarray((sparse[rows] @ sparse.T).todense(), dtype=np.float32)
    else:
        dense = vectorize(texts, embedder).dense
        sims = dense[rows] @ dense.T
    must, may = set(rows), set(rows)
    for row in sims:
        near = np.flatnonzero(row >= bar)
        ranked = np.sort(row[near])[::-1]
        cut = ranked[per_row] if len(ranked) > per_row else bar
        must.update(np.flatnonzero((row >= bar) & (row > cut + EPS)).tolist())
        may.update(np.flatnonzero((row >= bar - EPS) & (row >= cut - EPS)).tolist())
    ids = [m.id for m in memories]
    return {ids[k] for k in must}, {ids[k] for k in may}


@pytest.mark.parametrize("source", ["embed", "held", "tfidf"])
@pytest.mark.parametrize("per_row", [1, 3, 40])
def test_the_neighbourhood_block_by_block_is_the_whole_comparisons(source, per_row):
    memories = _memories(90)
    embedder = {"embed": HashingEmbedder(), "held": EmbeddingCache(HashingEmbedder())}.get(source)
    scope = {m.id for m in memories[3::9]}
    bar = 0.2 if source == "tfidf" else 0.5
    must, may = _reference(memories, scope, embedder, bar=bar, per_row=per_row)
    for block in (1, 7, 64, 4096):
        got = neighbourhood(memories, scope, embedder, bar=bar, per_row=per_row, block=block)
        ids = [m.id for m in got]
        assert ids == sorted(ids) and must <= set(ids) <= may
        assert len(scope) < len(ids) <= len(scope) * (per_row + 2)  # (+ the row itself)
    assert per_row > 1 or len(may) < len(memories)  # the cut to the strongest kept few


def test_the_neighbourhood_never_holds_the_stores_vectors_or_similarities_whole():
    memories = _memories(4000)
    cache = EmbeddingCache(HashingEmbedder(dims=384))
    cache.embed([m.content for m in memories])  # as an earlier run left it
    scope = {m.id for m in memories[::20]}  # 200 changed
    whole = 4000 * 384 * 4  # the stacked vectors alone (the 200 x 4000 similarities: half that)
    neighbourhood(memories[:50], scope, cache, bar=0.5, per_row=4, block=256)  # imports done
    tracemalloc.start()
    try:
        got = neighbourhood(memories, scope, cache, bar=0.5, per_row=4, block=256)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(got) > len(scope)
    assert peak < whole / 2


def test_an_incremental_cluster_run_never_loads_numpy_ma(tmp_path):
    """np.unique checks for a masked array, importing numpy.ma (~9 ms) on first use: the
    cluster step was the only one in a consolidation run to call it."""
    import subprocess
    import sys
    from pathlib import Path

    script = """
import sys
from fakes import HashingEmbedder
from cortexgraph.agents.cluster_detector import ClusterDetector
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.embedding_cache import EmbeddingCache

store = InMemoryStore()
for k in range(60):
    store.save(f"the ledger note {k % 9} on postgres {k % 4}", now=1_760_000_000.0 + k)
changed = {m.id for m in sorted(store.list(), key=lambda m: m.id)[:5]}
cache = EmbeddingCache(HashingEmbedder())
report = ClusterDetector(store, cache).run(now=1_760_000_100.0, dry_run=True, scope=changed)
assert report.candidate_pairs, report
print("numpy.ma" in sys.modules)
"""
    tests = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tests), "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "False"


class _IdReads:
    """A memory whose id reads are counted (what the neighbourhood needs of it: id, text)."""

    reads = 0

    def __init__(self, memory) -> None:
        self.memory = memory
        self.content = memory.content

    @property
    def id(self) -> str:
        _IdReads.reads += 1
        return self.memory.id


def test_a_few_changed_memories_are_found_without_reading_every_memorys_id():
    memories = _memories(1000)
    counted = [_IdReads(m) for m in memories]
    scope = {memories[500].id, memories[3].id, "a-memory-no-longer-active"}
    embedder = EmbeddingCache(HashingEmbedder())
    want = [m.id for m in neighbourhood(memories, scope, embedder, bar=0.5, per_row=3)]
    _IdReads.reads = 0
    got = neighbourhood(counted, scope, embedder, bar=0.5, per_row=3)
    reads = _IdReads.reads
    assert [m.memory.id for m in got] == want and len(want) > 2
    assert reads < 100  # bisection: ~11 reads an id, not one per memory
