"""Embedding cache and the incrementally maintained dense matrix (fake counting embedder)."""

from __future__ import annotations

from cortexgraph.storage import InMemoryStore, open_store
from cortexgraph.storage.embeddings import EmbeddingCache, MatrixDenseIndex, dense_text

NOW = 1_700_000_000


def test_cache_is_keyed_by_content(embedder) -> None:
    cache = EmbeddingCache(embedder)
    cache.embed(["alpha", "beta"])
    cache.embed(["alpha", "beta"])
    assert len(embedder.texts) == 2
    cache.embed(["alpha changed"])
    assert len(embedder.texts) == 3


def test_cache_is_keyed_by_model(tmp_path, embedder) -> None:
    first = EmbeddingCache(embedder, tmp_path)
    first.embed(["alpha"])
    first.save()
    EmbeddingCache(embedder, tmp_path).embed(["alpha"])
    assert len(embedder.texts) == 1  # same model, same text: read from disk
    other = type(embedder)(name="another-model")
    EmbeddingCache(other, tmp_path).embed(["alpha"])
    assert len(other.texts) == 1  # a different model never reuses these vectors


def test_reopening_a_store_does_not_re_embed(tmp_path, embedder) -> None:
    def open_with_dense():
        cache = EmbeddingCache(embedder, tmp_path)
        return open_store(tmp_path, dense=MatrixDenseIndex(cache)), cache

    store, cache = open_with_dense()
    for i in range(5):
        store.save(f"memory number {i} about gardening", now=NOW)
    store.search("gardening", now=NOW)
    cache.save()
    embedded = len(embedder.texts)
    assert embedded == 6  # five memories and the query

    store2, _ = open_with_dense()
    store2.search("gardening", now=NOW)
    assert len(embedder.texts) == embedded + 1  # only the query, never the memories


def test_changing_content_re_embeds_only_that_memory(embedder) -> None:
    store = InMemoryStore(dense=MatrixDenseIndex(EmbeddingCache(embedder)))
    memories = [store.save(f"note {i} on birds", now=NOW) for i in range(20)]
    store.search("birds", now=NOW)
    before = len(embedder.texts)
    store.update(memories[3].id, content="note 3 on fish")
    store.touch(memories[4].id, now=NOW)  # a use changes no text: nothing to embed
    results = store.search("birds", now=NOW)
    assert len(embedder.texts) == before + 1  # the edited memory (the same question: reused)
    fish = store.search("fish", now=NOW)
    assert fish[0].memory.id == memories[3].id
    assert memories[3].id not in {r.memory.id for r in results[:1]}


def test_deleted_memories_leave_the_dense_matrix(embedder) -> None:
    dense = MatrixDenseIndex(EmbeddingCache(embedder))
    store = InMemoryStore(dense=dense)
    keep = store.save("car wash", now=NOW)
    gone = store.save("car rental", now=NOW)
    store.search("car", now=NOW)
    assert len(dense) == 2
    store.delete(gone.id)
    ids = [r.memory.id for r in store.search("automobile", now=NOW)]
    assert ids == [keep.id] and len(dense) == 1


def test_dense_text_includes_context() -> None:
    store = InMemoryStore()
    m = store.save("Yes!", context="Did you get the job?", now=NOW)
    assert dense_text(m) == "Yes!\nDid you get the job?"
    assert dense_text(store.save("plain", now=NOW)) == "plain"


def test_protocol_methods_agree_with_fast_path(embedder) -> None:
    dense = MatrixDenseIndex(EmbeddingCache(embedder))
    store = InMemoryStore()
    memories = [store.save(t, now=NOW) for t in ("car park", "bird song", "vehicle tax")]
    top = dense.top("automobile", memories, 2)
    assert set(top) == {memories[0].id, memories[2].id}
    sims = dense.similarities("automobile", memories[1:2])
    assert sims[memories[1].id] < min(top.values())


def test_the_first_sync_makes_room_for_every_row_at_once(embedder) -> None:
    """A store's first search fills the matrix in one step: no doubling (each doubling copied
    the matrix; at 10k memories the last copy was 25 MB of the first search's peak)."""
    dense = MatrixDenseIndex(EmbeddingCache(embedder))
    store = InMemoryStore(dense=dense)
    memories = [store.save(f"note {i} about the harbour", now=NOW) for i in range(1000)]
    store.search("harbour", now=NOW)
    width = dense.cache.embed(["harbour"]).shape[1]
    assert len(dense) == 1000
    assert dense.nbytes == 1000 * width * 4  # exactly the rows it holds
    store.save("one more note about the harbour", now=NOW)
    store.search("harbour", now=NOW)  # later rows still fit (the matrix doubles again)
    assert len(dense) == 1001 and dense.ranked("harbour", 3)
    assert memories[0].id in dense.scores_of("harbour", [memories[0].id])
