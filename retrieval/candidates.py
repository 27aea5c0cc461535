"""The candidates of one memory_retrieve call, gathered per tier (core, STM, LTM, graph facts).

Keyed so that a memory and its promoted note become one item; each candidate carries what the
composite score needs (similarity, recency, tier, frequency).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cortexgraph.retrieval.core import core_memories, core_notes, is_current
from cortexgraph.retrieval.graph import entities_in_text, graph_query, memory_ref
from cortexgraph.retrieval.packing import Candidate, day, flatten, order_by
from cortexgraph.storage.decay import DAY, memory_score
from cortexgraph.storage.indexed_store import IndexedStore
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore
from cortexgraph.vault_sync.note_body import reading_text

if TYPE_CHECKING:
    from cortexgraph.retrieval.context import RetrievalConfig, RetrievalFilters

TIER_PRIORITY = {"core": 1.0, "ltm": 1.0, "stm": 0.7, "graph": 0.5, "history": 0.2}
_STRUCTURAL = {"mentions", "about", "tagged", "promoted_to"}  # where things are, not facts


class CandidateGatherer:
    """Collects candidates per tier, keyed so a memory and its note become one item."""

    def __init__(
        self,
        store: IndexedStore,
        index: Any,
        filters: RetrievalFilters,
        cfg: RetrievalConfig,
        now: float,
        history: bool,
    ) -> None:
        self.store, self.index, self.filters, self.cfg = store, index, filters, cfg
        self.now, self.history = now, history
        self.by_key: dict[str, Candidate] = {}
        self.notes: list[str] = []
        self.save_ranks: dict[str, int] = {}  # the candidates' memories, set by finish()
        if index is None and ("ltm" in filters.memory_types):
            self.notes.append("no vault index: long-term notes not searched")

    # -- tiers ------------------------------------------------------------------------------
    def core(self) -> None:
        for m in core_memories(self.store):
            note = self._note_of(m)
            self._add(
                self._from_note(note, "core", 1.0) if note else self._from_memory(m, "core", 1.0)
            )
        if self.index is not None:
            for n in core_notes(self.index.notes.values()):
                self._add(self._from_note(n, "core", 1.0))

    def stm(self, query: str, use_embeddings: bool | None) -> None:
        results = self.store.search(
            query,
            top_k=self.cfg.stm_candidates,
            status=None,
            now=self.now,
            use_embeddings=use_embeddings,
        )
        for r in results:
            m = r.memory
            if m.status == MemoryStatus.ARCHIVED:
                continue
            if not is_current(m):
                if self.history:
                    self._add(self._history(m, r.similarity))
                successor = self._successor(m)
                if successor is not None:  # search prefers the current fact
                    self._add_memory(successor, max(0.0, r.similarity - 0.05))
                continue
            self._add_memory(m, r.similarity)

    def ltm(self, query: str, embedder: Any) -> None:
        if self.index is None:
            return
        from cortexgraph.vault_sync.unified_search import search_unified

        results = search_unified(
            self.store,
            self.index,
            query,
            limit=self.cfg.ltm_candidates,
            stm_weight=0.0,
            ltm_weight=1.0,
            embedder=embedder,
            now=self.now,
            verbose=True,
        )
        for r in results:
            note = self.index.get(r.note_path) if r.note_path else None
            if note is not None and note.conflict_of is None:
                self._add(self._from_note(note, "ltm", min(1.0, r.score)))

    def graph(self, query: str) -> None:
        for entity in entities_in_text(self.store, query, self.index)[: self.cfg.graph_entities]:
            result = graph_query(
                self.store,
                entity,
                depth=1,
                ltm_index=self.index,
                max_nodes=40,
                max_fanout=15,
                max_triples=40,
            )
            for t in result.triples:
                if t.predicate in _STRUCTURAL:
                    if t.predicate == "about" and t.subject.startswith("n:") and self.index:
                        note = self.index.get(t.subject[2:])  # the entity's own note
                        if note is not None:
                            self._add(self._from_note(note, "ltm", 0.5))
                    continue
                times = [
                    self.store.find(result.memory_ids[r])
                    for r in (t.subject, t.object)
                    if r in result.memory_ids
                ]
                if not self.history and any(m is None or not is_current(m) for m in times):
                    continue  # a fact about an outdated memory is history
                created = max((m.created_at for m in times if m is not None), default=0)
                c = Candidate(
                    "graph",
                    f"f:{t.subject}|{t.predicate}|{t.object}",
                    f"f:{t.subject}|{t.predicate}",
                    "",
                    created_at=created,
                    similarity=0.5 * t.strength,
                    recency=1.0 if not created else _memory_recency(times, self.store, self.now),
                    fact=(t.subject, t.predicate, t.object),
                    labels=dict(result.labels),
                )
                self._add(c)

    # -- candidates -------------------------------------------------------------------------
    def _add_memory(self, m: Memory, similarity: float) -> None:
        note = self._note_of(m)
        self._add(
            self._from_note(note, "ltm", similarity)
            if note is not None
            else self._from_memory(m, "stm", similarity)
        )

    def _from_memory(self, m: Memory, tier: str, similarity: float) -> Candidate:
        decay = memory_score(m, self.now, self.store.config.decay)
        return Candidate(
            tier,
            m.id,
            memory_ref(m.id),
            flatten(m.content),
            m.created_at,
            similarity,
            min(1.0, decay),
            _frequency(m.use_count),
            memory_id=m.id,
        )

    def _from_note(self, note: Any, tier: str, similarity: float) -> Candidate:
        body = reading_text(note.content)  # its words, not the managed Related list's links
        if body.lower().startswith(note.title.lower()):
            body = body[len(note.title) :].lstrip(" :-")  # the first heading repeats the title
        age_days = max(0.0, self.now - note.mtime_ns / 1e9) / DAY
        backlinks = len(self.index.backlinks(note.path)) if self.index is not None else 0
        return Candidate(
            tier,
            note.path,
            f"n:{note.path}",
            f"{note.title}: {body}",
            note.mtime_ns / 1e9,
            similarity,
            0.5 ** (age_days / self.cfg.ltm_halflife_days),
            _frequency(backlinks),
            memory_id=note.memory_id,
            note_path=note.path,
        )

    def _history(self, m: Memory, similarity: float) -> Candidate:
        c = self._from_memory(m, "history", similarity)
        until = m.meta.extra.get("valid_until")
        successor = m.meta.extra.get("superseded_by")
        c.suffix = (f"until {day(until)}" if isinstance(until, (int, float)) else "outdated") + (
            f", now {memory_ref(successor)}" if isinstance(successor, str) else ""
        )
        c.key = f"history:{m.id}"
        return c

    def _successor(self, m: Memory) -> Memory | None:
        seen = {m.id}
        while True:
            nxt = m.meta.extra.get("superseded_by")
            if not isinstance(nxt, str) or nxt in seen:
                return None
            found = self.store.find(nxt)
            if found is None:
                return None
            if is_current(found):
                return found
            seen.add(found.id)
            m = found

    def _note_of(self, m: Memory) -> Any:
        if self.index is None:
            return None
        note = self.index.by_memory_id(m.id)
        if note is None and m.promoted_to:
            note = self.index.get(m.promoted_to)
        return note

    def _add(self, c: Candidate) -> None:
        """Keep one candidate per key: the higher tier, then the higher similarity."""
        if c.tier not in ("core", "history") and not self.filters.admits_time(c.created_at):
            return
        keys = [c.key] + ([c.memory_id] if c.memory_id and c.memory_id != c.key else [])
        for key in keys:
            old = self.by_key.get(key)
            if old is None:
                continue
            if (TIER_PRIORITY[old.tier], old.similarity) >= (TIER_PRIORITY[c.tier], c.similarity):
                old.similarity = max(old.similarity, c.similarity)
                return
            self._drop(old)
        for key in keys:
            self.by_key[key] = c

    def _drop(self, c: Candidate) -> None:
        for key in [k for k, v in self.by_key.items() if v is c]:
            del self.by_key[key]

    def finish(self) -> tuple[list[Candidate], list[Candidate]]:
        unique = list({id(c): c for c in self.by_key.values()}.values())
        score = self.cfg.weights.score
        for c in unique:
            c.score = score(c)
        self.save_ranks = self.store.save_ranks(c.memory_id for c in unique if c.memory_id)
        core = order_by(lambda c: c.score, [c for c in unique if c.tier == "core"], self.save_ranks)
        floor = self.filters.min_confidence
        rest = [c for c in unique if c.tier != "core" and (floor is None or c.score >= floor)]
        return core, rest


def _frequency(count: int) -> float:
    """log-scaled: 0 uses -> 0, 20+ uses (or backlinks) -> 1."""
    return min(1.0, math.log1p(max(0, count)) / math.log1p(20))


def _memory_recency(memories: Sequence[Memory | None], store: MemoryStore, now: float) -> float:
    scores = [memory_score(m, now, store.config.decay) for m in memories if m is not None]
    return min(1.0, max(scores, default=0.0))


__all__ = ["TIER_PRIORITY", "CandidateGatherer"]
