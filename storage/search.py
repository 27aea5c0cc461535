"""Hybrid search over a store's indexes.

1. Candidates: every memory sharing a term with the query (BM25 postings over content, tags,
   entities, and at lower weight the memory's context), plus the dense index's nearest
   neighbours when embeddings are on. With no query: every memory in scope.
2. Relevance: BM25 normalised by the best hit, fused by weight with the cosine similarity of
   the query to the memory's content and context. A memory whose entity the query names
   (a person, a project) is boosted. A merged memory scores as its best-matching part: its
   archived sources stay indexed and lend it their relevance (``merged_into``); its own
   text, the union of theirs, is not scored.
3. Decay re-ranks: ``relevance * (1 - w + w * min(decay, 1))``; it never filters on its own.
4. Natural spaced repetition: danger-zone matches may fill the tail of the list (at most
   ``review_blend_ratio`` of it), never ahead of clearly better matches.

Every weight here was measured on LoCoMo dev with bench/locomo.py; see docs/retrieval.md.

Search reads a store through ``SearchableStore`` (the read-only views ``StoreIndexes`` offers)
and talks to its dense index through storage.protocol's ``DenseIndex`` or, for a plain scorer,
``DenseScorer``. ``fused_similarity`` is the one lexical/dense fusion rule; vault_sync's unified
search ranks notes with it too. The dense side (rows kept in step, a query's cosines) is
storage.dense_search; what the vectors compare of a query and of a line is
storage.query_meaning.
"""

from __future__ import annotations

import logging
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from cortexgraph.storage.decay import DAY, in_danger_zone, memory_score
from cortexgraph.storage.dense_search import background_limits, dense_scores, sync_dense
from cortexgraph.storage.merged_parts import MERGED_INTO, fold_parts, merged_into
from cortexgraph.storage.models import Memory, MemoryStatus, SearchResult
from cortexgraph.storage.protocol import DenseIndex, OwnWordsScorer
from cortexgraph.storage.query_meaning import names_in_query, own_words_gains, without_names

if TYPE_CHECKING:
    from cortexgraph.storage.config import StoreConfig
    from cortexgraph.storage.indexes import DenseSyncState
    from cortexgraph.storage.protocol import DenseScorer
    from cortexgraph.storage.text_index import TextIndex

log = logging.getLogger(__name__)


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


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchRequest:
    """One search: what to match (``query``, ``tags``: all of them), which memories count
    (``status``; None: any; last used within ``window_days``; decay score at least
    ``min_score``), how many to return, and the time to score decay at."""

    now: float
    query: str | None = None
    tags: tuple[str, ...] = ()
    top_k: int = 10
    window_days: float | None = None
    min_score: float | None = None
    status: MemoryStatus | None = MemoryStatus.ACTIVE
    use_embeddings: bool | None = None  # None: when the store has a dense scorer
    tuning: SearchTuning = DEFAULT_TUNING


class SearchableStore(Protocol):
    """What search reads of a store: ``IndexedStore`` (storage.indexes' read-only views).
    The caller holds the store's lock and has brought it up to date."""

    @property
    def config(self) -> StoreConfig: ...
    @property
    def dense(self) -> DenseScorer | None: ...
    @property
    def dense_sync(self) -> DenseSyncState: ...
    @property
    def memories_by_id(self) -> Mapping[str, Memory]: ...
    @property
    def save_order(self) -> Mapping[str, int]: ...
    @property
    def text_index(self) -> TextIndex: ...
    @property
    def ids_by_tag(self) -> Mapping[str, set[str]]: ...
    @property
    def ids_by_entity(self) -> Mapping[str, set[str]]: ...
    @property
    def ids_by_status(self) -> Mapping[MemoryStatus, set[str]]: ...


def fused_similarity(lexical: float, cosine: float | None, semantic_weight: float) -> float:
    """One 0-1 relevance from a lexical score (BM25 over the best hit's) and a cosine: their
    weighted sum, a negative cosine counting as 0. Without a cosine (no vector yet, or no
    embeddings) the lexical score stands alone, not scaled down as if the cosine were 0."""
    if cosine is None:
        return lexical
    return (1.0 - semantic_weight) * lexical + semantic_weight * max(0.0, cosine)


# The defaults of unified search's STM-side weights (vault_sync.unified_search), here so that
# the settings (cortexgraph.settings, which may not import vault_sync) read the same values.
# An archived memory's score is its STM score times ARCHIVE_WEIGHT. Its decay, under the forget
# threshold, already ranks it below every equally relevant memory gc keeps (x0.85 to x0.8575
# against x0.8575 to x1); archiving decides the working set (search_memory, the hook's recall),
# it is no evidence about relevance, so by default it moves nothing here: gc must not make a
# memory harder to find. bench/lifecycle.py, whole LoCoMo dev split, defaults row: R@5 0.610 at
# 0.9 (the earlier default), 0.615 at 1 (no_gc 0.616); MRR 0.535 -> 0.551 (docs/pipeline.md).
ARCHIVE_WEIGHT = 1.0
# Each of the best STM hits lends RELATED_WEIGHT times its score to its ``related`` memories
# (vault_sync.related_expansion). Off: on the whole LoCoMo dev split through MCP, 0.15 after a
# consolidation run gave multi-hop R@5 +0.005 for R@5 -0.007 and MRR -0.005
# (docs/retrieval.md); it does not earn its place yet.
RELATED_WEIGHT = 0.0


def query_entities(store: SearchableStore, query: str) -> set[str]:
    """Ids of memories with an entity that the query names (1-3 word phrases, any case)."""
    return names_in_query(store.ids_by_entity, query)[0]


def relevance_scores(
    store: SearchableStore,
    query: str,
    scope: set[str] | None,
    top_k: int,
    use_embeddings: bool | None,
    tuning: SearchTuning = DEFAULT_TUNING,
    unscored: Container[str] = (),
) -> tuple[dict[str, float], dict[str, float]]:
    """(ranking relevance, 0-1 text similarity) of every candidate for ``query``; memories
    in ``unscored`` are left out, and so are not the best match that BM25 is scaled by."""
    cfg = store.config
    # Only the best lexical hits are re-ranked; a memory further down can still come in
    # through the dense pool. Keeps a query over 100k memories to a few milliseconds.
    # The context field is indexed with the memory (add/load); ``use_context`` only weighs it.
    bm25 = store.text_index.top(
        query,
        max(tuning.lexical_pool, 20 * top_k),
        scope,
        context_weight=None if tuning.use_context else 0.0,
    )
    if unscored:
        bm25 = {i: v for i, v in bm25.items() if i not in unscored}
    best = max(bm25.values(), default=0.0)
    lexical = {i: s / best for i, s in bm25.items()} if best > 0 else {}
    # The names the entity index matches exactly (a boost below) are left out of the text the
    # vectors compare (storage.query_meaning says why).
    named, spans = (
        names_in_query(store.ids_by_entity, query) if tuning.entity_boost > 0 else (set(), [])
    )
    meaning = without_names(query, spans)
    dense: dict[str, float] = {}
    scorer = store.dense
    if scorer is not None and use_embeddings is not False:
        from cortexgraph.storage.embeddings import EmbeddingUnavailableError

        pool_k = max(tuning.dense_pool, top_k * 5)
        try:
            dense = dense_scores(store, scorer, meaning, scope, lexical, pool_k)
        except EmbeddingUnavailableError as exc:
            if use_embeddings:  # asked for explicitly: say it cannot be done
                raise
            log.warning("embeddings unavailable, ranking by BM25 only: %s", exc)
    if unscored:
        dense = {i: v for i, v in dense.items() if i not in unscored}
    w = cfg.semantic_weight if dense else 0.0
    boost = dict.fromkeys(named, 1.0 + tuning.entity_boost)

    def fuse(ids: Iterable[str]) -> None:
        # A hit without a vector yet (the background embedder has it queued): BM25 alone.
        for i in ids:
            similarity[i] = fused_similarity(lexical.get(i, 0.0), dense.get(i), w)
            relevance[i] = similarity[i] * boost.get(i, 1.0)

    similarity: dict[str, float] = {}
    relevance: dict[str, float] = {}
    fuse(lexical.keys() | dense.keys())
    if dense and isinstance(scorer, OwnWordsScorer):
        # Beside a background embedder (which embeds these contents after each save) a search
        # embeds at most SEARCH_EMBED_LIMIT of them itself, as for the rows.
        limit = (
            background_limits(scorer).get("embed_limit") if isinstance(scorer, DenseIndex) else None
        )
        fuse(own_words_gains(store.memories_by_id, scorer, meaning, relevance, dense, top_k, limit))
    return relevance, similarity


def _outdated(memory: Memory) -> bool:
    """Superseded by a later fact, or deprecated (retrieval.forget): ranked low."""
    extra = memory.meta.extra
    return bool(extra) and bool(extra.get("superseded_by") or extra.get("deprecated"))


def _lift_successors(
    store: SearchableStore,
    results: list[SearchResult],
    rank: dict[str, float],
    scope: Container[str] | None,
    now: float,
) -> list[SearchResult]:
    """Give the memory that replaced a matching fact at least the rank the old fact earned."""
    by_id = {r.memory.id: i for i, r in enumerate(results)}
    for successor_id, score in rank.items():
        memory = store.memories_by_id.get(successor_id)
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


def run_search(store: SearchableStore, request: SearchRequest) -> list[SearchResult]:
    """Relevance first (BM25, fused with embeddings), re-ranked by decay; the caller holds the
    store's lock and has brought it up to date (``store.search`` does both)."""
    query, tags, top_k, now = request.query, request.tags, request.top_k, request.now
    window_days, min_score, tuning = request.window_days, request.min_score, request.tuning
    status = request.status
    cfg = store.config
    memories = store.memories_by_id
    scope: set[str] | None = None if status is None else store.ids_by_status[status]
    for tag in tags:
        tagged = store.ids_by_tag.get(tag.lower(), set())
        scope = tagged if scope is None else scope & tagged

    relevance: dict[str, float] = {}
    similarity: dict[str, float] = {}
    wholes: set[str] = set()
    successor_rank: dict[str, float] = {}
    w = cfg.decay_rerank_weight
    if query and query.strip():
        parts = {p: w for p, w in merged_into(store).items() if scope is None or w in scope}
        wholes = set(parts.values())
        wide = scope if scope is None or not parts else scope | parts.keys()
        # A merged memory is scored through its parts (fold_parts), not by its own text: the
        # union of theirs matched a question better than any part had, and as BM25's best
        # match it lowered every other memory's lexical score.
        relevance, similarity = relevance_scores(
            store, query, wide, top_k, request.use_embeddings, tuning, wholes
        )
        if parts:
            # A part that was outdated before the merge lends its relevance as it ranked then,
            # and lifts its successor as it did then.
            for p in parts.keys() & relevance.keys():
                part = memories[p]
                if _outdated(part):
                    successor = part.meta.extra.get("superseded_by")
                    if isinstance(successor, str):
                        decay = min(memory_score(part, now, cfg.decay), 1.0)
                        lifted = relevance[p] * (1.0 - w + w * decay)
                        successor_rank[successor] = max(successor_rank.get(successor, 0.0), lifted)
                    relevance[p] *= tuning.outdated_factor
            fold_parts(relevance, similarity, parts, scope)
        candidates = [memories[i] for i in relevance]
    else:
        ids = scope if scope is not None else memories.keys()
        candidates = [memories[i] for i in ids]

    results: list[SearchResult] = []
    for m in candidates:
        if window_days is not None and (now - m.last_used) > window_days * DAY:
            continue
        decay = memory_score(m, now, cfg.decay)
        if min_score is not None and decay < min_score:
            continue
        rel = relevance.get(m.id, 1.0)
        score = rel * (1.0 - w + w * min(decay, 1.0)) if relevance else decay
        # A merged memory holds its sources' markers, but one outdated source does not make
        # the others outdated: its parts' were weighed above.
        if m.id not in wholes and _outdated(m):
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
    # Equal scores and last use (a burst of saves shares one second): the later save first,
    # the same in every process; the random id would reorder them from run to run.
    order = store.save_order
    results.sort(key=lambda r: (-r.score, -r.memory.last_used, -order.get(r.memory.id, -1)))
    head = results[:top_k]
    if relevance and cfg.review_blend_ratio > 0 and len(results) > top_k:
        head = _blend_reviews(head, results[top_k:], top_k, cfg)
    return head


def _blend_reviews(
    head: list[SearchResult], rest: list[SearchResult], top_k: int, cfg: StoreConfig
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
    "ARCHIVE_WEIGHT",
    "DEFAULT_TUNING",
    "MERGED_INTO",
    "RELATED_WEIGHT",
    "SearchRequest",
    "SearchTuning",
    "SearchableStore",
    "fused_similarity",
    "merged_into",
    "query_entities",
    "relevance_scores",
    "run_search",
    "sync_dense",
]
