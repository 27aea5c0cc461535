"""Hybrid search over a store's indexes.

1. Candidates: every memory sharing a term with the query (BM25 postings over content, tags,
   entities, and at lower weight the memory's context), plus the dense index's nearest
   neighbours when embeddings are on. With no query: every memory in scope.
2. Relevance: BM25 normalised by the best hit, fused by weight with the cosine similarity of
   the query to the memory's content and context. A memory whose entity the query names
   (a person, a project) is boosted.
3. Decay re-ranks: ``relevance * (1 - w + w * min(decay, 1))``; it never filters on its own.
4. Natural spaced repetition: danger-zone matches may fill the tail of the list (at most
   ``review_blend_ratio`` of it), never ahead of clearly better matches.

Every weight here was measured on LoCoMo dev with bench/locomo.py; see docs/retrieval.md.
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Container, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cortexgraph.storage.decay import DAY, in_danger_zone, memory_score
from cortexgraph.storage.models import MemoryStatus, SearchResult

if TYPE_CHECKING:
    from cortexgraph.storage.memory_store import IndexedStore

log = logging.getLogger(__name__)

_ENTITY_WORD_RE = re.compile(r"[\w][\w'.+#-]*", re.UNICODE)


@dataclass(frozen=True, slots=True)
class SearchTuning:
    """Knobs of the ranking that are not store configuration (defaults are the measured best)."""

    # A memory tagged with an entity the query names scores (1 + entity_boost) times higher.
    entity_boost: float = 0.5
    # Dense neighbours taken as candidates beyond the lexical hits: max(dense_pool, 5 * top_k).
    dense_pool: int = 50
    # Best BM25 hits re-ranked by fusion and decay: max(lexical_pool, 20 * top_k).
    lexical_pool: int = 200
    # Use the memory's context (neighbouring text) in BM25 and embeddings.
    use_context: bool = True
    # Temporal truth: a fact replaced by a newer one (``meta.extra["superseded_by"]``) or marked
    # ``deprecated`` stays findable as history, but ranks below current facts; the fact that
    # replaced it takes the rank the old one earned (a query about Paris finds "moved to London").
    outdated_factor: float = 0.3


DEFAULT_TUNING = SearchTuning()


class _SideIndexState:
    """How far a store's dense rows have followed its text index's change journal."""

    __slots__ = ("dense_at", "pending")

    def __init__(self) -> None:
        # id(dense) -> (serial of the TextIndex, journal version)
        self.dense_at: dict[int, tuple[int, int]] = {}
        # id(dense) -> ids changed but not embedded yet (left for the background embedder)
        self.pending: dict[int, set[str]] = {}


# With a background embedder (the MCP server's), a search embeds at most SEARCH_EMBED_LIMIT of
# the memories the embedding cache does not hold yet, so a burst of saves catches up within a
# few searches; past SEARCH_BACKLOG_LIMIT (a store opened without its cache) it embeds none and
# the backlog ranks by BM25 alone until the background embedder has it.
# One batch of 32 short texts is ~0.2 s of MiniLM on one core.
SEARCH_EMBED_LIMIT = 32
SEARCH_BACKLOG_LIMIT = 2_000


_STATE: weakref.WeakKeyDictionary[Any, _SideIndexState] = weakref.WeakKeyDictionary()


def _changed_ids(
    store: IndexedStore, seen: tuple[int, int] | None
) -> tuple[tuple[int, int], set[str] | None]:
    text = store._text
    if seen is None or seen[0] != text.serial:
        return (text.serial, text.version), None
    version, ids = text.changes_since(seen[1])
    return (text.serial, version), ids


def _limit(dense: Any) -> dict[str, int]:
    """Only an index with a background embedder may leave memories for later."""
    if not getattr(dense, "embeds_in_background", False):
        return {}
    return {"embed_limit": SEARCH_EMBED_LIMIT, "backlog_limit": SEARCH_BACKLOG_LIMIT}


def sync_dense(store: IndexedStore, dense: Any, state: _SideIndexState) -> None:
    """Bring the dense index's rows up to date with what changed since the last search."""
    mark, ids = _changed_ids(store, state.dense_at.get(id(dense)))
    memories = store._memories
    pending = state.pending.setdefault(id(dense), set())
    if ids is None:
        current = list(memories.values())
        known = getattr(dense, "_row", {})
        left = dense.sync(
            current, removed=[i for i in list(known) if i not in memories], **_limit(dense)
        )
        pending.clear()
    else:
        # While a background embedder works through a large backlog, its rows are synced once
        # it is done, not re-checked by every search (10k key hashes each).
        if len(pending) <= SEARCH_BACKLOG_LIMIT or not getattr(dense, "background_busy", False):
            ids = ids | pending
            pending.clear()
        left = dense.sync(
            [memories[i] for i in ids if i in memories],
            [i for i in ids if i not in memories],
            **_limit(dense),
        )
    pending.update(m.id for m in left or ())
    state.dense_at[id(dense)] = mark


def query_entities(store: IndexedStore, query: str) -> set[str]:
    """Ids of memories with an entity that the query names (1-3 word phrases, any case)."""
    tokens = [t.strip("'.-") for t in _ENTITY_WORD_RE.findall(query.lower())]
    tokens = [t.removesuffix("'s") for t in tokens if t]
    hits: set[str] = set()
    by_entity = store._by_entity
    if not by_entity:
        return hits
    for n in (1, 2, 3):
        for i in range(len(tokens) - n + 1):
            ids = by_entity.get(" ".join(tokens[i : i + n]))
            if ids:
                hits |= ids
    return hits


def _dense_scores(
    store: IndexedStore,
    query: str,
    scope: set[str] | None,
    lexical: dict[str, float],
    top_k: int,
    tuning: SearchTuning,
) -> dict[str, float]:
    # duck-typed: a DenseIndex (ranked, sync) or any plain DenseScorer (top, similarities)
    dense: Any = store.dense
    pool_k = max(tuning.dense_pool, top_k * 5)
    if hasattr(dense, "ranked") and hasattr(dense, "sync"):
        state = _STATE.setdefault(store, _SideIndexState())
        sync_dense(store, dense, state)
        scores: dict[str, float] = dense.ranked(query, pool_k, scope)
        missing = [i for i in lexical if i not in scores]
        if missing:
            scores.update(dense.scores_of(query, missing))
        return scores
    # A plain DenseScorer (storage.protocol) wants the memories themselves.
    pool = (
        [store._memories[i] for i in scope] if scope is not None else list(store._memories.values())
    )
    scores = dense.top(query, pool, pool_k)
    extra = [store._memories[i] for i in lexical if i not in scores]
    if extra:
        scores.update(dense.similarities(query, extra))
    return scores


def relevance_scores(
    store: IndexedStore,
    query: str,
    scope: set[str] | None,
    top_k: int,
    use_embeddings: bool | None,
    tuning: SearchTuning = DEFAULT_TUNING,
) -> tuple[dict[str, float], dict[str, float]]:
    """(ranking relevance, 0-1 text similarity) of every candidate for ``query``."""
    cfg = store.config
    # Only the best lexical hits are re-ranked; a memory further down can still come in
    # through the dense pool. Keeps a query over 100k memories to a few milliseconds.
    # The context field is indexed with the memory (add/load); ``use_context`` only weighs it.
    bm25 = store._text.top(
        query,
        max(tuning.lexical_pool, 20 * top_k),
        scope,
        context_weight=None if tuning.use_context else 0.0,
    )
    best = max(bm25.values(), default=0.0)
    lexical = {i: s / best for i, s in bm25.items()} if best > 0 else {}
    dense: dict[str, float] = {}
    if store.dense is not None and use_embeddings is not False:
        from cortexgraph.storage.embeddings import EmbeddingUnavailableError

        try:
            dense = _dense_scores(store, query, scope, lexical, top_k, tuning)
        except EmbeddingUnavailableError as exc:
            if use_embeddings:  # asked for explicitly: say it cannot be done
                raise
            log.warning("embeddings unavailable, ranking by BM25 only: %s", exc)
    w = cfg.semantic_weight if dense else 0.0
    similarity: dict[str, float] = {}
    for i in lexical.keys() | dense.keys():
        if i in dense:
            similarity[i] = (1.0 - w) * lexical.get(i, 0.0) + w * max(0.0, dense[i])
        else:  # no vector yet (the background embedder has it queued): judged by BM25 alone,
            similarity[i] = lexical[i]  # not scaled down as if its cosine were 0
    relevance = dict(similarity)
    if tuning.entity_boost > 0:
        for i in query_entities(store, query) & relevance.keys():
            relevance[i] *= 1.0 + tuning.entity_boost
    return relevance, similarity


def _lift_successors(
    store: IndexedStore,
    results: list[SearchResult],
    rank: dict[str, float],
    scope: Container[str] | None,
    now: float,
) -> list[SearchResult]:
    """Give the memory that replaced a matching fact at least the rank the old fact earned."""
    by_id = {r.memory.id: i for i, r in enumerate(results)}
    for successor_id, score in rank.items():
        memory = store._memories.get(successor_id)
        if memory is None or (scope is not None and successor_id not in scope):
            continue
        i = by_id.get(successor_id)
        if i is None:
            decay = memory_score(memory, now, store.config.decay)
            age = max(0.0, (now - memory.created_at) / DAY)
            results.append(SearchResult(memory, score, 0.0, decay, age))
        elif results[i].score < score:
            r = results[i]
            results[i] = SearchResult(r.memory, score, r.similarity, r.decay_score, r.age_days)
    return results


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
    tuning: SearchTuning = DEFAULT_TUNING,
) -> list[SearchResult]:
    cfg = store.config
    scope: set[str] | None = None if status is None else store._by_status[status]
    for tag in tags:
        tagged = store._by_tag.get(tag.lower(), set())
        scope = tagged if scope is None else scope & tagged

    relevance: dict[str, float] = {}
    similarity: dict[str, float] = {}
    if query and query.strip():
        relevance, similarity = relevance_scores(store, query, scope, top_k, use_embeddings, tuning)
        candidates = [store._memories[i] for i in relevance]
    else:
        ids = scope if scope is not None else store._memories.keys()
        candidates = [store._memories[i] for i in ids]

    results: list[SearchResult] = []
    successor_rank: dict[str, float] = {}
    w = cfg.decay_rerank_weight
    for m in candidates:
        if window_days is not None and (now - m.last_used) > window_days * DAY:
            continue
        decay = memory_score(m, now, cfg.decay)
        if min_score is not None and decay < min_score:
            continue
        rel = relevance.get(m.id, 1.0)
        score = rel * (1.0 - w + w * min(decay, 1.0)) if relevance else decay
        if m.meta.extra and (m.meta.extra.get("superseded_by") or m.meta.extra.get("deprecated")):
            successor = m.meta.extra.get("superseded_by")
            if isinstance(successor, str):
                successor_rank[successor] = max(successor_rank.get(successor, 0.0), score)
            score *= tuning.outdated_factor
        results.append(
            SearchResult(
                memory=m,
                score=score,
                similarity=min(1.0, similarity.get(m.id, 0.0)),
                decay_score=decay,
                age_days=max(0.0, (now - m.created_at) / DAY),
            )
        )
    if successor_rank:
        results = _lift_successors(store, results, successor_rank, scope, now)
    results.sort(key=lambda r: (-r.score, -r.memory.last_used, r.memory.id))
    head = results[:top_k]
    if relevance and cfg.review_blend_ratio > 0 and len(results) > top_k:
        head = _blend_reviews(head, results[top_k:], top_k, cfg)
    return head


def _blend_reviews(
    head: list[SearchResult], rest: list[SearchResult], top_k: int, cfg: Any
) -> list[SearchResult]:
    """Spaced repetition: a fading memory that still matches well may take a tail slot from a
    match that is not clearly better (within 20% of its score); never one ahead of that."""
    slots = int(top_k * cfg.review_blend_ratio)
    floor = head[-1].score
    review = [
        r for r in rest if in_danger_zone(r.decay_score, cfg.decay) and r.score >= 0.8 * floor
    ][:slots]
    if not review:
        return head
    keep = head[: top_k - len(review)]
    return keep + [
        SearchResult(r.memory, r.score, r.similarity, r.decay_score, r.age_days, True)
        for r in review
    ]


__all__ = [
    "DEFAULT_TUNING",
    "SearchTuning",
    "query_entities",
    "relevance_scores",
    "run_search",
    "sync_dense",
]
