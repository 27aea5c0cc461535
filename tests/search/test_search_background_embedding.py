"""Search beside a background embedder (the MCP server's): a few fresh saves are embedded on
the spot, a backlog is left to the embedder, and a memory without a vector yet is ranked by
BM25 alone rather than as if its cosine were 0."""

from __future__ import annotations

from cortexgraph.storage import InMemoryStore, StoreConfig, dense_search
from cortexgraph.storage.embeddings import EmbeddingCache, MatrixDenseIndex

NOW = 1_700_000_000


class BackgroundDense(MatrixDenseIndex):
    """A MatrixDenseIndex as the server wires it: saves are embedded elsewhere, later."""

    embeds_in_background = True
    background_busy = False

    def __init__(self, cache: EmbeddingCache) -> None:
        super().__init__(cache)
        self.queued: list[str] = []

    def sync(self, memories, removed=(), embed_limit=None, backlog_limit=2_000, prefer=None):
        left = super().sync(memories, removed, embed_limit, backlog_limit, prefer)
        self.queued.extend(m.id for m in left)
        return left


def _store(embedder) -> tuple[InMemoryStore, BackgroundDense]:
    dense = BackgroundDense(EmbeddingCache(embedder))
    return InMemoryStore(StoreConfig(semantic_weight=0.7), dense=dense), dense


def test_a_backlog_is_left_to_the_background_and_ranked_by_bm25(embedder, monkeypatch) -> None:
    monkeypatch.setattr(dense_search, "SEARCH_BACKLOG_LIMIT", 30)
    store, dense = _store(embedder)
    backlog = [store.save(f"note {i} about gardening tools", now=NOW) for i in range(35)]
    target = store.save("the quarterly budget review is on Friday", now=NOW)
    results = store.search("quarterly budget review", top_k=3, now=NOW)
    assert len(embedder.texts) == 1  # the question, once: no backlog embedded by the search
    assert {m.id for m in backlog} | {target.id} <= set(dense.queued)
    assert results[0].memory.id == target.id
    assert results[0].score > 0.8  # BM25 alone, not 0.3 x BM25 as if its cosine were 0


def test_a_burst_of_saves_catches_up_a_few_per_search(embedder, monkeypatch) -> None:
    monkeypatch.setattr(dense_search, "SEARCH_EMBED_LIMIT", 4)
    store, dense = _store(embedder)
    fresh = [store.save(f"fresh note {i} on the billing ledger", now=NOW) for i in range(10)]
    store.search("billing ledger", top_k=3, now=NOW)
    assert len(dense._row) == 4 and len(dense.queued) == 6  # the rest left to the background
    store.search("billing ledger", top_k=3, now=NOW)
    store.search("billing ledger", top_k=3, now=NOW)
    assert {m.id for m in fresh} <= set(dense._row)  # caught up within three searches


def test_a_search_embeds_its_own_lexical_hits_first(embedder, monkeypatch) -> None:
    """Of a burst of unembedded saves, a search embeds the ones its question's words reach
    (their cosine can change the ranking) and leaves the others to the background."""
    monkeypatch.setattr(dense_search, "SEARCH_EMBED_LIMIT", 4)
    store, dense = _store(embedder)
    other = [store.save(f"note {i} about gardening tools", now=NOW) for i in range(20)]
    hits = [store.save(f"fresh note {i} on the billing ledger", now=NOW) for i in range(3)]
    results = store.search("billing ledger", top_k=3, now=NOW)
    assert {m.id for m in hits} <= set(dense._row)  # embedded now, though saved last
    assert not {m.id for m in other} & set(dense._row)  # the background embedder's
    assert {m.id for m in other} <= set(dense.queued)
    assert {r.memory.id for r in results} == {m.id for m in hits}


def test_a_search_embeds_few_lines_own_words_and_leaves_the_rest(embedder, monkeypatch) -> None:
    """Beside a background embedder (which embeds each saved line's own words too), a search
    embeds at most SEARCH_EMBED_LIMIT of the contents it compares its best hits by."""
    monkeypatch.setattr(dense_search, "SEARCH_EMBED_LIMIT", 2)
    store, dense = _store(embedder)
    lines = [
        store.save(f"billing ledger line {i}", neighbour=f"talk {i} about lunch", now=NOW)
        for i in range(6)
    ]
    dense.sync(lines)  # every row embedded, as after the background embedder caught up
    before = len(embedder.texts)
    store.search("billing ledger", top_k=6, now=NOW)
    contents = {m.content for m in lines}
    assert sum(t in contents for t in embedder.texts[before:]) == 2
    assert dense.own_texts(lines) == [m.content for m in lines]
