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


def lacking(
    store: MemoryStore, cache: EmbeddingCache, only: Collection[str] | None = None
) -> list[str]:
    """The distinct texts of the active memories (of ``only``, the ids an incremental run
    changed, when given: the others were embedded by earlier runs, and looking them up cost
    ~1 s per call at 100k memories) that the cache lacks, sorted."""
    if only is None:
        memories = store.list(status=MemoryStatus.ACTIVE)
    else:
        found = store.find_many(only)
        memories = [m for m in found if m.status is MemoryStatus.ACTIVE]
    return cache.missing(sorted({m.content for m in memories}))


def warm_embeddings(
    store: MemoryStore,
    cache: EmbeddingCache,
    batch_size: int = 1024,
    only: Collection[str] | None = None,
) -> int:
    """Embed the active memories the cache lacks (``lacking``), as mapped tasks; returns how
    many were embedded."""
    missing = lacking(store, cache, only)
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


def embed_merged(
    store: MemoryStore,
    cache: EmbeddingCache,
    batch_size: int = 1024,
    only: Collection[str] | None = None,
) -> str | None:
    """After the merge: the texts it made (of ``only``, as ``warm_embeddings``) are embedded
    only when this run has embedded texts already, its model loaded and cheap to ask again.
    Otherwise they are left, and a note says so: a running MCP server picks them up in the
    background (mcp_server/store_pickup.py), else the next run's cluster step embeds what
    the cache lacks, and search what it ranks. Loading the model for them cost ~0.3 s of a
    1.35 s run after 100 saves on a 10k store. None: nothing was missing."""
    if cache.embedded:
        embedded = warm_embeddings(store, cache, batch_size, only)
        return f"embedded {embedded} merged text(s)" if embedded else None
    left = len(lacking(store, cache, only))
    if not left:
        return None
    return (
        f"{left} merged text(s) left to embed (no model loaded in this run): by the MCP "
        "server in the background, else the next run"
    )


__all__ = ["embed_batch", "embed_merged", "lacking", "warm_embeddings"]
