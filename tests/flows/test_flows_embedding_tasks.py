"""warm_embeddings embeds only what the cache lacks, through EmbeddingCache.missing."""

from __future__ import annotations

from fakes import HashingEmbedder

from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.embeddings import EmbeddingCache
from cortexgraph.storage.models import MemoryStatus


def test_missing_lists_each_uncached_text_once(tmp_path):
    cache = EmbeddingCache(HashingEmbedder(), tmp_path)
    cache.embed(["a", "b"])
    assert cache.missing(["b", "c", "a", "c", "d"]) == ["c", "d"]
    assert cache.missing([]) == []


def test_warm_embeddings_embeds_only_missing_active_texts(prefect_harness, monkeypatch):
    import cortexgraph.flows.embedding_tasks as et

    model = HashingEmbedder()
    monkeypatch.setattr(et, "_model", model)  # what a worker process would have loaded
    store = InMemoryStore()
    for text in ("alpha", "beta", "gamma"):
        store.save(text, now=1_760_000_000)
    archived = store.save("old", now=1_760_000_000)
    store.update(archived.id, status=MemoryStatus.ARCHIVED)
    cache = EmbeddingCache(HashingEmbedder())
    cache.embed(["alpha"])

    from prefect import flow

    @flow
    def warm() -> int:
        return et.warm_embeddings(store, cache, batch_size=1)

    assert warm() == 2
    assert sorted(model.texts) == ["beta", "gamma"]  # not the cached one, not the archived one
    assert cache.missing(["alpha", "beta", "gamma"]) == []
    assert warm() == 0


def test_an_incremental_run_warms_only_the_memories_it_changed(prefect_harness, monkeypatch):
    """``only``: the changed ids of an incremental run; an older memory the cache lacks (a
    deleted cache file) is embedded when a step asks for its vector, not looked up here."""
    import cortexgraph.flows.embedding_tasks as et

    model = HashingEmbedder()
    monkeypatch.setattr(et, "_model", model)
    store = InMemoryStore()
    old = store.save("older memory", now=1_760_000_000)
    new = store.save("new memory", now=1_760_000_100)
    gone = store.save("merged away", now=1_760_000_100)
    store.update(gone.id, status=MemoryStatus.ARCHIVED)
    cache = EmbeddingCache(HashingEmbedder())

    from prefect import flow

    @flow
    def warm() -> int:
        return et.warm_embeddings(store, cache, batch_size=4, only={new.id, gone.id, "no-such"})

    assert warm() == 1
    assert model.texts == ["new memory"]
    assert cache.missing([old.content]) == [old.content]
