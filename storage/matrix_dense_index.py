"""The dense half of hybrid search: ``MatrixDenseIndex``, one float32 matrix with a row per
memory, kept in step with the store and queried with one matrix-vector product.

Rows are embedded through an ``EmbeddingCache`` (storage.embedding_cache) from ``dense_text``;
storage.embeddings re-exports both names beside the model that fills the cache.
"""

from __future__ import annotations

import threading
from collections.abc import Container, Iterable, Sequence

import numpy as np

from cortexgraph.storage.embedding_cache import EmbeddingCache
from cortexgraph.storage.models import Memory


def dense_text(memory: Memory) -> str:
    """What gets embedded: the content, then its context or the text saved just before it
    (``Memory.ranking_context``; measured: +0.05 R@5 on LoCoMo)."""
    context = memory.ranking_context
    return f"{memory.content}\n{context}" if context else memory.content


class MatrixDenseIndex:
    """The embedding half of hybrid search (a storage.protocol ``DenseIndex``, and a
    ``DenseScorer`` for callers that hold memories rather than a synced index).

    Keeps one float32 matrix with a row per memory, updated in place when a memory changes
    (``sync``), so a query is one matvec over the matrix, never a re-stack of vectors."""

    # Everything is embedded on the spot; the MCP server's wrapper embeds in the background.
    embeds_in_background: bool = False
    background_busy: bool = False

    def __init__(self, cache: EmbeddingCache, include_context: bool = True) -> None:
        self.cache = cache
        self.include_context = include_context
        self._lock = threading.RLock()
        self._row: dict[str, int] = {}
        self._key: list[str | None] = []  # text_key of each row; None marks a free row
        self._ids: list[str | None] = []
        self._seen: dict[str, Memory] = {}  # the record each row was last synced from
        self._free: list[int] = []
        self._matrix = np.zeros((0, 0), dtype=np.float32)  # width set by the first vector
        self._valid = np.zeros(0, dtype=bool)
        self._last_query: tuple[str, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self._row)

    @property
    def nbytes(self) -> int:
        return int(self._matrix.nbytes)

    def sync(
        self,
        memories: Sequence[Memory],
        removed: Iterable[str] | None = (),
        embed_limit: int | None = None,
        backlog_limit: int = 2_000,
        prefer: Sequence[str] | None = None,
    ) -> list[Memory]:
        """Make the rows of ``memories`` current and drop the rows of ``removed`` ids
        (``None``: ``memories`` are the whole store, drop the row of any other id).

        ``embed_limit``: embed at most this many texts the cache lacks now, and none when
        more than ``backlog_limit`` are missing (a search right after a burst of saves, or on
        a store opened without its cache, must not wait: a background embedder fills the
        cache). ``prefer``: of the texts the cache lacks, embed now only those of these ids,
        in this order (a search passes its lexical hits, best first: the rows that can change
        this question's ranking; the background embedder has the rest). Returns the memories
        left out, to sync later."""
        with self._lock:
            if removed is None:
                current = {m.id for m in memories}
                removed = [i for i in self._row if i not in current]
            for memory_id in removed:
                row = self._row.pop(memory_id, None)
                self._seen.pop(memory_id, None)
                if row is not None:
                    self._key[row] = self._ids[row] = None
                    self._valid[row] = False
                    self._free.append(row)
            seen = self._seen
            # Records are immutable: the very object we synced from needs no second look.
            changed = [m for m in memories if seen.get(m.id) is not m]
            if not changed:
                return []
            texts = self.texts_of(changed)
            keys = self.cache.keys(texts)
            stale = [
                i
                for i, (m, k) in enumerate(zip(changed, keys, strict=True))
                if (r := self._row.get(m.id)) is None or self._key[r] != k
            ]
            deferred: list[int] = []
            if stale and embed_limit is not None:
                uncached = set(self.cache.missing([texts[i] for i in stale]))
                waiting = [i for i in stale if texts[i] in uncached]
                # Up to embed_limit now (fresh saves catch up in a few searches); a backlog
                # past backlog_limit (a store opened without its cache) is left whole to the
                # background embedder, so no search pays for it.
                if len(waiting) > backlog_limit:
                    over = waiting
                elif prefer is not None:
                    slot = {changed[i].id: i for i in waiting}
                    chosen = set([slot[m] for m in prefer if m in slot][:embed_limit])
                    over = [i for i in waiting if i not in chosen]
                else:
                    over = waiting[embed_limit:]
                if over:
                    skip = set(over)
                    stale = [i for i in stale if i not in skip]
                    deferred = over
            if stale:
                vecs = self.cache.embed([texts[i] for i in stale])
                if len(self._matrix) and vecs.shape[1] != self._matrix.shape[1]:
                    # Rows from vectors of another width (an old cache): rebuild them all.
                    return self.sync(
                        [*self._reset(), *changed],
                        embed_limit=embed_limit,
                        backlog_limit=backlog_limit,
                        prefer=prefer,
                    )
                # Room for every new row at once: doubling row by row copied the matrix at each
                # step (the first search at 10k memories: 25 MB at the last step, not 15).
                new_rows = len({changed[i].id for i in stale} - self._row.keys())
                if new_rows > len(self._free):
                    self._grow(vecs.shape[1], new_rows - len(self._free))
                for i, vec in zip(stale, vecs, strict=True):
                    self._put_row(changed[i].id, keys[i], vec)
            left = {changed[i].id for i in deferred}
            for m in changed:
                if m.id not in left:
                    seen[m.id] = m
            return [changed[i] for i in deferred]

    def texts_of(self, memories: Sequence[Memory]) -> list[str]:
        """The text each memory is embedded from (content, and its context when included)."""
        return [dense_text(m) if self.include_context else m.content for m in memories]

    def _put_row(self, memory_id: str, key: str, vec: np.ndarray) -> None:
        row = self._row.get(memory_id)
        if row is None:
            if not self._free:
                self._grow(len(vec))
            row = self._free.pop()
            self._row[memory_id] = row
        self._matrix[row] = vec
        self._key[row], self._ids[row] = key, memory_id
        self._valid[row] = True

    def _grow(self, dim: int, at_least: int = 1) -> None:
        """``at_least`` more free rows (doubling, or exactly that many when more)."""
        old = self._matrix.shape[0]
        new = max(64, old * 2, old + at_least)
        matrix = np.zeros((new, self._matrix.shape[1] if old else dim), dtype=np.float32)
        if old:
            matrix[:old] = self._matrix
        valid = np.zeros(new, dtype=bool)
        valid[:old] = self._valid
        self._matrix, self._valid = matrix, valid
        self._key.extend([None] * (new - old))
        self._ids.extend([None] * (new - old))
        self._free.extend(range(new - 1, old - 1, -1))

    def query_vector(self, query: str) -> np.ndarray:
        """Queries are embedded fresh: caching them would fill the persisted cache with
        one-off questions, but the last one is kept: a search asks for it twice (the nearest
        rows, then the scores of lexical hits outside them). The model's width settles the
        cache's: rows of another are rebuilt."""
        last = self._last_query
        if last is not None and last[0] == query:
            return last[1]
        q = np.asarray(self.cache.embedder.embed([query])[0], dtype=np.float32)
        self._last_query = (query, q)
        if q.ndim != 1 or not np.isfinite(q).all():
            return np.zeros(max(self._matrix.shape[1], 1), dtype=np.float32)
        with self._lock:
            dropped = self.cache.settle_width(len(q))
            if dropped or (len(self._matrix) and self._matrix.shape[1] != len(q)):
                self.sync(self._reset())
        return q

    def _reset(self) -> list[Memory]:
        """Forget every row; returns the memories they were synced from."""
        seen = list(self._seen.values())
        self._row, self._key, self._ids, self._seen, self._free = {}, [], [], {}, []
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._valid = np.zeros(0, dtype=bool)
        return seen

    def ranked(self, query: str, k: int, allowed: Container[str] | None = None) -> dict[str, float]:
        """Cosine of the k most similar synced memories (restricted to ``allowed`` ids)."""
        q = self.query_vector(query)
        with self._lock:
            sims = self._matrix @ q if len(self._matrix) else np.zeros(0, np.float32)
            sims[~self._valid] = -np.inf
            live = int(self._valid.sum())
            out: dict[str, float] = {}
            take = min(live, max(4 * k, 64) if allowed is not None else k)
            while take > 0:
                idx = (
                    np.argpartition(-sims, take - 1)[:take]
                    if take < len(sims)
                    else np.arange(len(sims))
                )
                idx = idx[np.argsort(-sims[idx], kind="stable")]
                out.clear()
                for row in idx:
                    memory_id = self._ids[row]
                    if memory_id is not None and (allowed is None or memory_id in allowed):
                        out[memory_id] = float(sims[row])
                        if len(out) >= k:
                            return out
                if take >= live:
                    break
                take = min(live, take * 4)
            return out

    def scores_of(self, query: str, memory_ids: Iterable[str]) -> dict[str, float]:
        """Cosine of synced memories by id (ids without a row are left out)."""
        q = self.query_vector(query)
        with self._lock:
            pairs = [(i, self._row[i]) for i in memory_ids if i in self._row]
            if not pairs:
                return {}
            sims = self._matrix[[r for _, r in pairs]] @ q
            return {i: float(s) for (i, _), s in zip(pairs, sims, strict=True)}

    def content_scores(
        self, query: str, memories: Sequence[Memory], embed_limit: int | None = None
    ) -> dict[str, float]:
        """Cosine of ``query`` to each memory's content alone (storage.protocol's
        ``OwnWordsScorer``): a row holds the content with its context, and a long context can
        outweigh a short line's own words. Embedded through the cache (kept by text); with
        ``embed_limit``, at most that many the cache lacks are embedded now, the first ones
        first, and the others are left out (a background embedder fills them in)."""
        texts = [m.content for m in memories]
        if embed_limit is not None:
            missing = set(self.cache.missing(texts)[embed_limit:])
            memories = [m for m, t in zip(memories, texts, strict=True) if t not in missing]
            texts = [m.content for m in memories]
        if not memories:
            return {}
        q = self.query_vector(query)
        vecs = self.cache.embed(texts)
        if vecs.ndim != 2 or vecs.shape[1] != len(q):
            return {}
        return {m.id: float(v @ q) for m, v in zip(memories, vecs, strict=True)}

    def own_texts(self, memories: Sequence[Memory]) -> list[str]:
        """The contents that ``content_scores`` compares apart from their rows: those of
        memories embedded with a context (for a background embedder to fill in)."""
        if not self.include_context:
            return []
        return [m.content for m in memories if m.ranking_context]

    # -- storage.protocol.DenseScorer: callers that hold memories rather than a synced index ------
    def similarities(self, query: str, memories: Sequence[Memory]) -> dict[str, float]:
        if not memories:
            return {}
        self.sync(memories)
        return self.scores_of(query, [m.id for m in memories])

    def top(self, query: str, memories: Sequence[Memory], k: int) -> dict[str, float]:
        if not memories:
            return {}
        self.sync(memories)
        return self.ranked(query, k, {m.id for m in memories})


__all__ = ["MatrixDenseIndex", "dense_text"]
