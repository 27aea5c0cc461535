"""Search through storage.protocol's DenseIndex: any object with its members gets the
incremental path (the MCP server wraps the real index), and a store only ever ranks what it
holds, even when it shares the index with another store (``InMemoryStore.copy_of``)."""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence

import pytest

from cortexgraph.storage import InMemoryStore, Memory
from cortexgraph.storage.embeddings import EmbeddingCache, MatrixDenseIndex
from cortexgraph.storage.protocol import DenseIndex
from cortexgraph.storage.search import fused_similarity

NOW = 1_700_000_000


class Wrapped:
    """Delegates to a MatrixDenseIndex and shows nothing else of it (as the MCP server's
    lazy wrapper does): no private rows for search to read."""

    embeds_in_background = False
    background_busy = False

    def __init__(self, index: MatrixDenseIndex) -> None:
        self._index = index
        self.synced = 0

    def sync(
        self,
        memories: Sequence[Memory],
        removed: Iterable[str] | None = (),
        embed_limit: int | None = None,
        backlog_limit: int = 2_000,
        prefer: Sequence[str] | None = None,
    ) -> list[Memory]:
        self.synced += 1
        return self._index.sync(memories, removed, embed_limit, backlog_limit, prefer)

    def ranked(self, query: str, k: int, allowed: Container[str] | None = None) -> dict[str, float]:
        return self._index.ranked(query, k, allowed)

    def scores_of(self, query: str, memory_ids: Iterable[str]) -> dict[str, float]:
        return self._index.scores_of(query, memory_ids)

    def top(self, query: str, memories: Sequence[Memory], k: int) -> dict[str, float]:
        raise AssertionError("a DenseIndex is asked through sync/ranked, not the pool path")

    def similarities(self, query: str, memories: Sequence[Memory]) -> dict[str, float]:
        raise AssertionError("a DenseIndex is asked through sync/ranked, not the pool path")


@pytest.mark.parametrize("wrapped", [False, True], ids=["index", "wrapper"])
def test_a_store_sharing_a_dense_index_ranks_only_its_own_memories(embedder, wrapped) -> None:
    index = MatrixDenseIndex(EmbeddingCache(embedder))
    dense = Wrapped(index) if wrapped else index
    live = InMemoryStore(dense=dense)
    kept = live.save("the boat trip to the lake", now=NOW)
    clone = InMemoryStore.copy_of(live)
    live.save("a boat on the lake at dawn", now=NOW)
    assert len(live.search("boat lake", now=NOW)) == 2  # the index now has rows for both

    hits = clone.search("boat lake", status=None, now=NOW)

    assert [h.memory.id for h in hits] == [kept.id]
    assert isinstance(dense, DenseIndex)
    if wrapped:
        assert dense.synced >= 2  # the incremental path, never the pool path


def test_fusion_weighs_lexical_and_cosine_and_never_scales_down_a_missing_vector() -> None:
    assert fused_similarity(0.8, 0.4, 0.5) == pytest.approx(0.6)
    assert fused_similarity(0.8, -0.3, 0.5) == pytest.approx(0.4)  # a negative cosine is 0
    assert fused_similarity(0.8, None, 0.5) == 0.8  # no vector yet: BM25 alone
    assert fused_similarity(0.8, 0.0, 0.0) == 0.8
