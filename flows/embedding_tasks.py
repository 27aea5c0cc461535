"""Embedding the texts the cache lacks, as mapped Prefect tasks (threads here, Dask elsewhere).

Each task embeds one batch in whatever process runs it (a Dask worker loads the model once);
the flow gathers the vectors and hands them to the store's embedding cache. This is a batch job:
the worker's model runs with half the cores each (the thread runner runs two tasks at once),
where interactive paths keep one thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Sequence

import numpy as np
from prefect import task, unmapped
from prefect.cache_policies import NO_CACHE

from cortexgraph.storage.embeddings import Embedder, EmbeddingCache, default_embedder
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.storage.protocol import MemoryStore

_model_lock = threading.Lock()
_model: Embedder | None = None


def batch_threads(concurrent_tasks: int = 2) -> int:
    """Threads per embedding task: the cores shared by the tasks that run at once."""
    return max(1, (os.cpu_count() or 1) // max(1, concurrent_tasks))


def _worker_model() -> Embedder:
    global _model
    with _model_lock:
        if _model is None:
            _model = default_embedder(threads=batch_threads())
            if _model is None:
                from cortexgraph.storage.embeddings import EmbeddingUnavailableError

                raise EmbeddingUnavailableError("no embedding model in this worker")
        return _model


@task(name="embed-batch", cache_policy=NO_CACHE, retries=1)
def embed_batch(texts: Sequence[str], model_name: str) -> np.ndarray:
    return _worker_model().embed(list(texts))


class _Prefetched:
    """An Embedder that answers from vectors computed by the mapped tasks."""

    def __init__(self, name: str, vectors: dict[str, np.ndarray]) -> None:
        self.name = name
        self._vectors = vectors

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vectors[t] for t in texts])


def warm_embeddings(
    store: MemoryStore,
    cache: EmbeddingCache,
    batch_size: int = 1024,
    only: Collection[str] | None = None,
) -> int:
    """Embed the active memories the cache lacks (of ``only``, the ids an incremental run
    changed, when given: the others were embedded by earlier runs, and looking them up cost
    ~1 s per call at 100k memories); returns how many were embedded."""
    if only is None:
        memories = store.list(status=MemoryStatus.ACTIVE)
    else:
        found = (store.find(i) for i in only)
        memories = [m for m in found if m is not None and m.status is MemoryStatus.ACTIVE]
    texts = sorted({m.content for m in memories})
    missing = cache.missing(texts)
    if not missing:
        return 0
    batches = [missing[i : i + batch_size] for i in range(0, len(missing), batch_size)]
    futures = embed_batch.map(batches, unmapped(cache.name))
    vectors: dict[str, np.ndarray] = {}
    for batch, future in zip(batches, futures, strict=True):
        vectors.update(zip(batch, future.result(), strict=True))
    real = cache.embedder
    cache.embedder = _Prefetched(cache.name, vectors)
    try:
        cache.embed(missing)
    finally:
        cache.embedder = real
    return len(missing)


__all__ = ["embed_batch", "warm_embeddings"]
