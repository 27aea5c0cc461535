"""Hybrid search over a store's indexes.

1. Candidates: every memory sharing a term with the query (BM25 postings), plus the dense
   index's nearest neighbours when embeddings are on. With no query: every memory in scope.
2. Relevance: BM25 normalised by the best hit, fused with cosine similarity by weight.
3. Decay re-ranks: ``relevance * (1 - w + w * min(decay, 1))``; it never filters on its own.
4. Natural spaced repetition: danger-zone matches may fill the tail of the list (at most
   ``review_blend_ratio`` of it), never ahead of clearly better matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from storage.decay import DAY, in_danger_zone, memory_score
from storage.models import Memory, MemoryStatus, SearchResult

if TYPE_CHECKING:
    from storage.base import IndexedStore


def run_search(
    store: IndexedStore,
    query: str | None,
    tags: Sequence[str],
    top_k: int,
    window_days: float | None,
    min_score: float | None,
    status: MemoryStatus | None,
    now: float,
    use_embeddings: bool | None,
) -> list[SearchResult]:
    cfg = store.config
    scope: set[str] | None = None if status is None else store._by_status[status]
    for tag in tags:
        tagged = store._by_tag.get(tag.lower(), set())
        scope = tagged if scope is None else scope & tagged

    def allowed(memory: Memory) -> bool:
        if window_days is not None and (now - memory.last_used) > window_days * DAY:
            return False
        return True

    relevance: dict[str, float] = {}
    similarity: dict[str, float] = {}
    if query and query.strip():
        bm25 = store._text.scores(query)
        if scope is not None:
            bm25 = {i: s for i, s in bm25.items() if i in scope}
        best = max(bm25.values(), default=0.0)
        lexical = {i: s / best for i, s in bm25.items()} if best > 0 else {}
        dense: dict[str, float] = {}
        want_dense = store.dense is not None and use_embeddings is not False
        if want_dense and store.dense is not None:
            pool = (
                [store._memories[i] for i in scope]
                if scope is not None
                else list(store._memories.values())
            )
            dense = store.dense.top(query, pool, max(50, top_k * 5))
            extra = [store._memories[i] for i in lexical if i not in dense]
            if extra:
                dense.update(store.dense.similarities(query, extra))
        w = cfg.semantic_weight if dense else 0.0
        for i in set(lexical) | set(dense):
            lex = lexical.get(i, 0.0)
            sem = max(0.0, dense.get(i, 0.0))
            relevance[i] = (1.0 - w) * lex + w * sem
            similarity[i] = relevance[i]
        candidates = [store._memories[i] for i in relevance]
    else:
        ids = scope if scope is not None else store._memories.keys()
        candidates = [store._memories[i] for i in ids]

    results: list[SearchResult] = []
    review_pool: list[SearchResult] = []
    w = cfg.decay_rerank_weight
    for m in candidates:
        if not allowed(m):
            continue
        decay = memory_score(m, now, cfg.decay)
        if min_score is not None and decay < min_score:
            continue
        rel = relevance.get(m.id, 1.0)
        score = rel * (1.0 - w + w * min(decay, 1.0)) if relevance else decay
        result = SearchResult(
            memory=m,
            score=score,
            similarity=similarity.get(m.id, 0.0),
            decay_score=decay,
            age_days=max(0.0, (now - m.created_at) / DAY),
        )
        results.append(result)
    results.sort(key=lambda r: (-r.score, -r.memory.last_used, r.memory.id))
    head = results[:top_k]
    if relevance and cfg.review_blend_ratio > 0 and len(results) > top_k:
        # Spaced repetition: a fading memory that still matches well may take a tail slot
        # from a match that is not clearly better (within 20% of its score).
        slots = int(top_k * cfg.review_blend_ratio)
        floor = head[-1].score
        review_pool = [
            r
            for r in results[top_k:]
            if in_danger_zone(r.decay_score, cfg.decay) and r.score >= 0.8 * floor
        ][:slots]
        if review_pool:
            keep = head[: top_k - len(review_pool)]
            head = keep + [
                SearchResult(r.memory, r.score, r.similarity, r.decay_score, r.age_days, True)
                for r in review_pool
            ]
    return head


__all__ = ["run_search"]
