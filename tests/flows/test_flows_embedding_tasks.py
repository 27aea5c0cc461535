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
