"""One ranking over short-term memories and long-term notes.

Each side scores relevance the same way (BM25 normalised by its best hit, fused with cosine
similarity by storage.search's ``fused_similarity`` when an embedder is given); STM relevance is then re-ranked by decay inside
``store.search``. Sides are weighted (``stm_weight``, ``ltm_weight``) and merged; a promoted
memory and its note are one result (source ``both``), found by the note's frontmatter ``id``
or the memory's ``promoted_to``.

A memory gc archived (its decay fell below the forget threshold; nobody asked for it to go) stays
findable as a labelled tier (``UnifiedResult.archived``): it ranks by its STM score times
``archive_weight``, below an equally relevant active memory and above clearly weaker ones. A
merge's archived source does not come back: the merged memory stands for it (``merged_into``).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np

from cortexgraph.storage.config import SEMANTIC_WEIGHT
from cortexgraph.storage.embeddings import Embedder, EmbeddingCache
from cortexgraph.storage.merged_parts import MERGED_INTO
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore
from cortexgraph.storage.search import ARCHIVE_WEIGHT, RELATED_WEIGHT, fused_similarity
from cortexgraph.storage.text_index import tokenize
from cortexgraph.vault_sync.added_words import added_terms, promoter_words, reading_terms
from cortexgraph.vault_sync.entity_notes import untouched_entity_note
from cortexgraph.vault_sync.ledger import STATE_DIR
from cortexgraph.vault_sync.ltm_index import LTMIndex, NoteRecord
from cortexgraph.vault_sync.note_body import reading_text
from cortexgraph.vault_sync.related_expansion import add_related

PREVIEW_CHARS = 200
_EMBED_CHARS = 2000  # MiniLM reads ~256 tokens; more text only costs time


@dataclass(frozen=True, slots=True)
class UnifiedResult:
    source: str  # "stm", "ltm" or "both"
    title: str
    preview: str
    score: float  # weighted; orders the list
    memory_id: str | None = None
    note_path: str | None = None
    tags: tuple[str, ...] = ()
    details: Mapping[str, float] = field(default_factory=dict)  # score parts, when verbose
    verbose: bool = False
    archived: bool = False  # a memory gc archived, found in the archive tier
    # A memory's times (epoch seconds), shown when verbose: /recall says when it was saved and
    # last used, as search_memory's full records let it.
    created_at: int | None = None
    last_used: int | None = None

    def to_json(self, verbose: bool | None = None) -> dict[str, Any]:
        """Ids, note paths and score parts are included for verbose results (or if asked)."""
        verbose = self.verbose if verbose is None else verbose
        data: dict[str, Any] = {
            "source": self.source,
            "title": self.title,
            "preview": self.preview,
            "score": round(self.score, 4),
            "tags": list(self.tags),
            "archived": self.archived,
        }
        if verbose:
            data.update(memory_id=self.memory_id, note_path=self.note_path, **self.details)
            if self.created_at is not None:
                data.update(created_at=self.created_at, last_used=self.last_used)
        return data


def search_unified(
    store: MemoryStore,
    ltm_index: LTMIndex | None,
    query: str,
    *,
    tags: Sequence[str] | None = None,
    limit: int = 10,
    stm_weight: float = 1.0,
    ltm_weight: float = 0.7,
    window_days: float | None = None,
    min_score: float | None = None,
    verbose: bool = False,
    embedder: Embedder | None = None,
    semantic_weight: float = SEMANTIC_WEIGHT,
    now: float | None = None,
    related_weight: float = RELATED_WEIGHT,
    archive_weight: float = ARCHIVE_WEIGHT,
    use_embeddings: bool | None = None,
) -> list[UnifiedResult]:
    """Best ``limit`` results across STM and LTM. ``window_days`` and ``min_score`` filter STM
    (they are decay notions); ``tags`` filter both (a tag also matches its nested children).
    Memories gc archived rank at ``archive_weight`` times their score (0: left out).
    ``use_embeddings`` is the STM side's (``store.search``); ``embedder`` the vault side's."""
    ts = time.time() if now is None else now
    wanted = max(limit * 3, 20)
    merged: dict[str, dict[str, Any]] = {}

    if stm_weight > 0:
        stm = store.search(
            query,
            tags=tags,
            top_k=min(1000, wanted),
            window_days=window_days,
            min_score=min_score,
            status=None,
            now=ts,
            use_embeddings=use_embeddings,
        )
        for r in stm:
            m = r.memory
            archived = m.status == MemoryStatus.ARCHIVED
            if archived and (archive_weight <= 0 or not findable_archived(m)):
                continue
            note = ltm_index.by_memory_id(m.id) if ltm_index is not None else None
            if note is None and ltm_index is not None and m.promoted_to:
                note = ltm_index.get(m.promoted_to)
            key = note.path if note is not None else f"memory:{m.id}"
            merged[key] = {
                "stm": stm_weight * (archive_weight if archived else 1.0) * r.score,
                "memory": m,
                "note": note,
                "archived": archived,
                "details": {
                    "stm_score": r.score,
                    "similarity": r.similarity,
                    "decay_score": r.decay_score,
                    **({"archive_weight": archive_weight} if archived else {}),
                },
            }

    if stm_weight > 0 and related_weight > 0:
        add_related(store, merged, weight=related_weight)  # linked memories of the best hits

    if ltm_index is not None and ltm_weight > 0:
        # Unfiltered, the STM side has ranked every memory the store holds; a note written for
        # one of them ranks as that memory unless a person added to it (ranked_as_its_memory).
        stm_ranked_all = stm_weight > 0 and window_days is None and min_score is None
        for note, relevance, parts in _ltm_scores(
            ltm_index, query, tags, wanted, embedder, semantic_weight
        ):
            as_memory = stm_ranked_all and ranked_as_its_memory(
                store, note, archive_weight, ltm_index
            )
            if as_memory and note.path not in merged:
                continue  # its memory did not make the STM side's list
            entry = merged.setdefault(note.path, {"note": note, "details": {}})
            entry["note"] = note
            entry["details"].update(ltm_score=relevance, **parts)
            if not as_memory:
                entry["ltm"] = ltm_weight * relevance

    # Rank on scores first; previews are built only for what is returned.
    ranked = heapq.nsmallest(
        limit,
        merged.items(),
        key=lambda kv: (-max(kv[1].get("stm", 0.0), kv[1].get("ltm", 0.0)), kv[0]),
    )
    return [_result(entry, verbose) for _, entry in ranked]


def _result(entry: Mapping[str, Any], verbose: bool) -> UnifiedResult:
    memory, note = entry.get("memory"), entry.get("note")
    has_stm, has_ltm = "stm" in entry, "ltm" in entry
    source = "both" if memory is not None and note is not None else ("stm" if has_stm else "ltm")
    score = max(entry.get("stm", 0.0), entry.get("ltm", 0.0))
    if note is not None:
        title, text, tags = note.title, note.content, note.tags
    else:
        assert memory is not None  # an entry holds a memory, a note or both
        title, text, tags = memory.content.split("\n", 1)[0][:80], memory.content, memory.tags
    if source == "both" and not has_ltm and memory is not None:
        text = memory.content  # matched through STM: show the memory's own words
    return UnifiedResult(
        source=source,
        title=title,
        preview=_preview(text, title),
        score=score,
        memory_id=memory.id if memory is not None else (note.memory_id if note else None),
        note_path=note.path if note is not None else None,
        tags=tuple(tags),
        details=dict(entry["details"]) if verbose else {},
        verbose=verbose,
        archived=bool(entry.get("archived")),
        created_at=memory.created_at if memory is not None else None,
        last_used=memory.last_used if memory is not None else None,
    )


def findable_archived(memory: Memory) -> bool:
    """An archived memory that search still shows: archived by gc (or ``gc`` with
    ``archive_instead``), not as a merge's source. Forgetting on request deletes or marks a
    fact outdated (retrieval.forget), it never archives."""
    return memory.status == MemoryStatus.ARCHIVED and not memory.meta.extra.get(MERGED_INTO)


def ranked_as_its_memory(
    store: MemoryStore, note: NoteRecord, archive_weight: float, index: LTMIndex | None = None
) -> bool:
    """A note promotion wrote for a memory the STM side can still find, holding nothing but
    what promotion wrote: the pair is one result and ranks by the memory's STM score alone.
    The note's relevance is BM25 over the vault's best match: in a vault of a few notes that
    is any note sharing one word with the query, so it lifted a promoted memory above better
    answers (two notes of dev conversation conv-41 ranked 2nd and 3rd for every question naming
    their speaker); a consolidation run must never make another memory harder to find. A note
    whose memory is gone ranks by its own words, and so does one a person added words to in
    Obsidian (vault_sync.added_words): those are nowhere in the store, and only the note can
    be found by them. ``index``: the note's index, whose cache keeps what was worked out."""
    if note.memory_id is None or note.conflict_of is not None:
        return False
    memory = store.find(note.memory_id)
    if memory is None or memory.meta.extra.get(MERGED_INTO):
        return False
    if memory.status == MemoryStatus.ARCHIVED and archive_weight <= 0:
        return False
    return not _adds_to_its_memory(note, memory, index)


def _adds_to_its_memory(note: NoteRecord, memory: Memory, index: LTMIndex | None) -> bool:
    """Whether a person added words to ``note`` (vault_sync.added_words), worked out once per
    note version and memory version (the index's cache empties when a note changes)."""
    key = ("added-words", note.path, note.mtime_ns, note.size, *promoter_words(memory, note.title))
    cache: dict[Any, Any] = index.derived_cache if index is not None else {}
    adds: bool | None = cache.get(key)
    if adds is None:
        note_terms = reading_terms(note.content, note.title)
        adds = cache[key] = bool(added_terms(note_terms, memory, note.title))
    return adds


def _ltm_scores(
    index: LTMIndex,
    query: str,
    tags: Sequence[str] | None,
    wanted: int,
    embedder: Embedder | None,
    semantic_weight: float,
) -> list[tuple[NoteRecord, float, dict[str, float]]]:
    allowed = _tag_filter(index, tags)
    bm25: dict[str, float] = {}
    if query and tokenize(query):
        bm25 = index.text_index().scores(query)
        if allowed is not None:
            bm25 = {p: s for p, s in bm25.items() if p in allowed}
    elif allowed is not None:  # tags only: every tagged note, equally relevant
        bm25 = dict.fromkeys(allowed, 1.0)
    pages = _navigation_pages(index)
    if pages:
        bm25 = {p: s for p, s in bm25.items() if p not in pages}
        allowed = (allowed if allowed is not None else set(index.notes)) - pages
    # Only the best ``wanted`` lexical hits can make the list; common words match most notes.
    top = heapq.nlargest(wanted, bm25.items(), key=itemgetter(1))
    best = top[0][1] if top else 0.0
    dense = _dense_top(index, query, embedder, allowed, wanted) if embedder and query else {}
    candidates = dict.fromkeys([p for p, _ in top] + list(dense))
    scored = []
    for path in candidates:
        lex = bm25.get(path, 0.0) / best if best > 0 else 0.0
        if not dense:
            scored.append((index.notes[path], lex, {"ltm_lexical": lex}))
            continue
        # A note outside the dense top-k counts as cosine 0 (its vector is not looked up).
        cosine = dense.get(path, 0.0)
        parts = {"ltm_lexical": lex, "ltm_semantic": max(0.0, cosine)}
        scored.append((index.notes[path], fused_similarity(lex, cosine, semantic_weight), parts))
    scored.sort(key=lambda t: -t[1])
    return scored[:wanted]


def _navigation_pages(index: LTMIndex) -> frozenset[str]:
    """Entity notes nobody wrote on: a heading with the entity's name and links to the notes
    that mention it, for Obsidian's graph. Their words are the name alone, so on the vault
    side's scale (BM25 over the best note) such a page matched every question naming its
    person as well as any note could, and took a top-5 place from an answer (dev conversation
    conv-26: 117 of 150 questions). They are not searched; graph_query finds the entity, and
    a page a person wrote on is searched as their note."""
    key = ("navigation-pages",)
    if key not in index.derived_cache:
        index.derived_cache[key] = frozenset(
            p for p, r in index.notes.items() if untouched_entity_note(r.frontmatter, r.content)
        )
    pages: frozenset[str] = index.derived_cache[key]
    return pages


def _tag_filter(index: LTMIndex, tags: Sequence[str] | None) -> set[str] | None:
    if not tags:
        return None
    want = [t.lower().lstrip("#") for t in tags]

    def has(note_tags: Sequence[str], tag: str) -> bool:
        return any(t.lower() == tag or t.lower().startswith(tag + "/") for t in note_tags)

    return {r.path for r in index.notes.values() if all(has(r.tags, t) for t in want)}


def _dense_top(
    index: LTMIndex, query: str, embedder: Embedder, allowed: set[str] | None, k: int
) -> dict[str, float]:
    paths, matrix = _note_matrix(index, embedder)
    if not paths:
        return {}
    sims = matrix @ embedder.embed([query])[0]
    if allowed is not None:
        mask = np.array([p in allowed for p in paths])
        sims = np.where(mask, sims, -1.0)
    k = min(k, len(paths))
    top = np.argpartition(-sims, k - 1)[:k]
    return {paths[i]: float(sims[i]) for i in top if sims[i] > -1.0}


def _note_matrix(index: LTMIndex, embedder: Embedder) -> tuple[list[str], np.ndarray]:
    """Note vectors, embedded once per note text and cached beside the index (.npz)."""
    key = ("note-vectors", embedder.name)
    if key in index.derived_cache:
        cached: tuple[list[str], np.ndarray] = index.derived_cache[key]
        return cached
    cache = EmbeddingCache(embedder, directory=index.vault / STATE_DIR)
    paths = list(index.notes)
    texts = [f"{index.notes[p].title}\n{index.notes[p].content[:_EMBED_CHARS]}" for p in paths]
    matrix = cache.embed(texts) if texts else np.zeros((0, 384), dtype=np.float32)
    cache.save()
    index.derived_cache[key] = (paths, matrix)
    return paths, matrix


def _preview(text: str, title: str) -> str:
    """The text as a reader sees it: no comments, '#' markers, link brackets or managed
    Related list (a note's links, not its words), nor a first heading that repeats the
    result's ``title`` (shown beside it)."""
    flat = reading_text(text, title=title)
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


__all__ = [
    "ARCHIVE_WEIGHT",
    "PREVIEW_CHARS",
    "UnifiedResult",
    "findable_archived",
    "ranked_as_its_memory",
    "search_unified",
]
