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
search ranks notes with it too.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from cortexgraph.storage.decay import DAY, in_danger_zone, memory_score
from cortexgraph.storage.merged_parts import MERGED_INTO, fold_parts, merged_into
from cortexgraph.storage.models import Memory, MemoryStatus, SearchResult
from cortexgraph.storage.protocol import DenseIndex, OwnWordsScorer

if TYPE_CHECKING:
    from cortexgraph.storage.config import StoreConfig
    from cortexgraph.storage.indexes import DenseSyncState
    from cortexgraph.storage.protocol import DenseScorer
    from cortexgraph.storage.text_index import TextIndex

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


# With a background embedder (the MCP server's), a search embeds at most SEARCH_EMBED_LIMIT of
# the memories the embedding cache does not hold yet, its best lexical hits first; the rest
# rank by BM25 alone until the background embedder has them. Past SEARCH_BACKLOG_LIMIT (a store
# opened without its cache) it embeds none. A saved turn with its context is ~100 tokens,
# ~15 ms of MiniLM on one core. LoCoMo dev through MCP right after each conversation's saves
# (one run each, load 3-4): limit 32 R@5 0.697, first search 1.01 s; 16: 0.696, 0.55 s;
# 8: 0.697, 0.30 s; 4: 0.685, 0.17 s.
SEARCH_EMBED_LIMIT = 8
SEARCH_BACKLOG_LIMIT = 2_000

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


def _changed_ids(
    store: SearchableStore, seen: tuple[int, int] | None
) -> tuple[tuple[int, int], set[str] | None]:
    text = store.text_index
    if seen is None or seen[0] != text.serial:
        return (text.serial, text.version), None
    version, ids = text.changes_since(seen[1])
    return (text.serial, version), ids


def _limit(dense: DenseIndex) -> dict[str, int]:
    """Only an index with a background embedder may leave memories for later."""
    if not dense.embeds_in_background:
        return {}
    return {"embed_limit": SEARCH_EMBED_LIMIT, "backlog_limit": SEARCH_BACKLOG_LIMIT}


def sync_dense(
    store: SearchableStore, dense: DenseIndex, prefer: Sequence[str] | None = None
) -> None:
    """Bring the dense index's rows up to date with what changed since the last search
    (``prefer``: of the memories not embedded yet, embed now only these ids, best first)."""
    state = store.dense_sync
    mark, ids = _changed_ids(store, state.dense_at.get(id(dense)))
    memories = store.memories_by_id
    pending = state.pending.setdefault(id(dense), set())
    if ids is None:  # first sync, or the store reloaded: all of it, and no other row
        left = dense.sync(list(memories.values()), removed=None, prefer=prefer, **_limit(dense))
        pending.clear()
    else:
        # While a background embedder works through a large backlog, its rows are synced once
        # it is done, not re-checked by every search (10k key hashes each).
        if len(pending) <= SEARCH_BACKLOG_LIMIT or not dense.background_busy:
            ids = ids | pending
            pending.clear()
        left = dense.sync(
            [memories[i] for i in ids if i in memories],
            [i for i in ids if i not in memories],
            prefer=prefer,
            **_limit(dense),
        )
    pending.update(m.id for m in left or ())
    state.dense_at[id(dense)] = mark


def query_entities(store: SearchableStore, query: str) -> set[str]:
    """Ids of memories with an entity that the query names (1-3 word phrases, any case)."""
    return _named(store, query)[0]


def _named(store: SearchableStore, query: str) -> tuple[set[str], list[tuple[int, int]]]:
    """(ids of memories with an entity the query names, where those names are in the query:
    character spans). Words are compared lower-cased, without edge punctuation or a 's."""
    words = []
    for m in _ENTITY_WORD_RE.finditer(query):
        token = m.group().lower().strip("'.-").removesuffix("'s")
        if token:
            words.append((token, m.start(), m.end()))
    hits: set[str] = set()
    spans: list[tuple[int, int]] = []
    by_entity = store.ids_by_entity
    if not by_entity:
        return hits, spans
    for n in (1, 2, 3):
        for i in range(len(words) - n + 1):
            ids = by_entity.get(" ".join(w[0] for w in words[i : i + n]))
            if ids:
                hits |= ids
                spans.append((words[i][1], words[i + n - 1][2]))
    return hits, spans


def _without_names(query: str, spans: Sequence[tuple[int, int]]) -> str:
    """The query less the names in ``spans`` (the whole query if nothing else is left)."""
    if not spans:
        return query
    cut = bytearray(len(query))
    for start, end in spans:
        cut[start:end] = b"\x01" * (end - start)
    rest = "".join(ch for ch, gone in zip(query, cut, strict=True) if not gone)
    rest = " ".join(rest.split())
    return rest if any(ch.isalnum() for ch in rest) else query


def _dense_scores(
    store: SearchableStore,
    dense: DenseScorer,
    query: str,
    scope: set[str] | None,
    lexical: dict[str, float],
    top_k: int,
    tuning: SearchTuning,
) -> dict[str, float]:
    pool_k = max(tuning.dense_pool, top_k * 5)
    if isinstance(dense, DenseIndex):  # rows kept in step: one matvec per query
        # Of the memories a burst of saves left unembedded, the question's lexical hits are
        # embedded now (their cosine can change this ranking); the rest are the background
        # embedder's. Taking the oldest ones instead made a search after ~400 saves embed
        # texts that the background thread was embedding at the same time.
        sync_dense(store, dense, prefer=list(lexical))  # best lexical hit first
        scores = dense.ranked(query, pool_k, scope)
        missing = [i for i in lexical if i not in scores]
        if missing:
            scores.update(dense.scores_of(query, missing))
        return scores
    # A plain DenseScorer wants the memories themselves.
    memories = store.memories_by_id
    pool = [memories[i] for i in scope] if scope is not None else list(memories.values())
    scores = dense.top(query, pool, pool_k)
    extra = [memories[i] for i in lexical if i not in scores]
    if extra:
        scores.update(dense.similarities(query, extra))
    return scores


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
    # vectors compare: "What does Melanie enjoy?" asks what she enjoys. A memory's vector holds
    # its speaker's name ("Melanie: ...") and names in the text saved beside it, so the name
    # drew the question toward her thank-yous and toward lines that address her.
    named, spans = _named(store, query) if tuning.entity_boost > 0 else (set(), [])
    meaning = _without_names(query, spans)
    dense: dict[str, float] = {}
    scorer = store.dense
    if scorer is not None and use_embeddings is not False:
        from cortexgraph.storage.embeddings import EmbeddingUnavailableError

        try:
            dense = _dense_scores(store, scorer, meaning, scope, lexical, top_k, tuning)
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
        fuse(_own_words(store, scorer, meaning, relevance, dense, top_k))
    return relevance, similarity


def _own_words(
    store: SearchableStore,
    scorer: OwnWordsScorer,
    query: str,
    relevance: Mapping[str, float],
    dense: dict[str, float],
    top_k: int,
) -> list[str]:
    """A line is compared with the query by its own words too, not only with the text ranked
    beside it: "I'm off to go swimming with the kids" saved after a long message about a book
    has a vector mostly about the book. Of the best ``top_k`` hits with a ranking context, each
    takes the better of the two cosines (``dense``, in place); returns the ids that gained.
    With a background embedder (which embeds these texts after each save) a search embeds at
    most SEARCH_EMBED_LIMIT of them itself, as for the rows."""
    memories = store.memories_by_id
    ranked = sorted(relevance, key=lambda i: -relevance[i])
    pool = [memories[i] for i in ranked if i in dense and memories[i].ranking_context][:top_k]
    limit = (
        SEARCH_EMBED_LIMIT
        if isinstance(scorer, DenseIndex) and scorer.embeds_in_background
        else None
    )
    own = scorer.content_scores(query, pool, limit)
    gained = [i for i, cosine in own.items() if cosine > dense[i]]
    for i in gained:
        dense[i] = own[i]
    return gained


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
    results.sort(key=lambda r: (-r.score, -r.memory.last_used, r.memory.id))
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
