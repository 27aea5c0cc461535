"""memory_retrieve: the smallest dense context for a query, from every memory tier at once.

Candidates come from STM search, the vault's LTM index and graph facts about the entities the
query names. Each gets one composite score in [0, 1]:

    (w_sem * similarity + w_rec * recency + w_tier * tier priority + w_freq * frequency) / sum(w)

with weights 0.4 / 0.3 / 0.2 / 0.1 by default. A memory and its promoted note are one item (the
note, the higher tier, wins). Core items are packed first inside ``core_share`` of the budget;
the rest greedily by score. Superseded facts are left out unless history is asked for, and a
superseded match brings its successor in.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cortexgraph.retrieval.core import core_memories, core_notes, is_current
from cortexgraph.retrieval.graph import entities_in_text, graph_query, memory_ref
from cortexgraph.retrieval.packing import Candidate, PackedItem, day, flatten, order_by, pack
from cortexgraph.retrieval.tokens import TokenCounter, default_counter
from cortexgraph.storage.decay import DAY, memory_score
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.memory_store import IndexedStore
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore

MEMORY_TYPES = ("core", "ltm", "stm", "graph")
TIER_PRIORITY = {"core": 1.0, "ltm": 1.0, "stm": 0.7, "graph": 0.5, "history": 0.2}
MIN_BUDGET, MAX_BUDGET = 20, 200_000
_STRUCTURAL = {"mentions", "about", "tagged", "promoted_to"}  # where things are, not facts


@dataclass(frozen=True, slots=True)
class RetrievalWeights:
    semantic: float = 0.4
    recency: float = 0.3
    tier: float = 0.2
    frequency: float = 0.1

    def __post_init__(self) -> None:
        values = (self.semantic, self.recency, self.tier, self.frequency)
        if any(not isinstance(v, (int, float)) or v < 0 or math.isnan(v) for v in values):
            raise InvalidInputError("retrieval weights must be non-negative numbers")
        if sum(values) <= 0:
            raise InvalidInputError("at least one retrieval weight must be above zero")

    def score(self, c: Candidate) -> float:
        total = self.semantic + self.recency + self.tier + self.frequency
        raw = (
            self.semantic * c.similarity
            + self.recency * c.recency
            + self.tier * TIER_PRIORITY[c.tier]
            + self.frequency * c.frequency
        )
        return raw / total


@dataclass(frozen=True, slots=True)
class RetrievalFilters:
    memory_types: frozenset[str] = frozenset(MEMORY_TYPES)
    after: float | None = None  # unix seconds: only items created at or after
    before: float | None = None  # ... and before
    min_confidence: float | None = None  # composite score floor, 0-1 (core items exempt)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> RetrievalFilters:
        """From ``{memory_types, after, before, min_confidence}``; dates as ISO text or numbers."""
        if not data:
            return cls()
        unknown = set(data) - {"memory_types", "after", "before", "min_confidence"}
        if unknown:
            raise InvalidInputError(
                f"unknown filter(s) {sorted(unknown)}; use memory_types, "
                "after, before, min_confidence"
            )
        types = data.get("memory_types") or MEMORY_TYPES
        if isinstance(types, str):
            types = [types]
        bad = set(types) - set(MEMORY_TYPES)
        if bad:
            raise InvalidInputError(
                f"unknown memory type(s) {sorted(bad)}; choose from {', '.join(MEMORY_TYPES)}"
            )
        conf = data.get("min_confidence")
        if conf is not None and (
            isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= conf <= 1
        ):
            raise InvalidInputError("min_confidence must be a number between 0 and 1")
        return cls(
            frozenset(types),
            _when(data.get("after"), "after"),
            _when(data.get("before"), "before"),
            conf,
        )

    def admits_time(self, ts: float) -> bool:
        return (self.after is None or ts >= self.after) and (
            self.before is None or ts < self.before
        )


def _when(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip())
        except ValueError as exc:
            raise InvalidInputError(f"{name} must be an ISO date like 2024-05-01: {exc}") from exc
        return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()
    raise InvalidInputError(f"{name} must be an ISO date or unix seconds, got {value!r}")


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    weights: RetrievalWeights = field(default_factory=RetrievalWeights)
    core_share: float = 0.25  # of the budget, reserved for core items first
    max_item_tokens: int = 200  # longer items are cut (long notes would eat the budget)
    stm_candidates: int = 30
    ltm_candidates: int = 15
    graph_entities: int = 3
    show_dates: bool = True
    ltm_halflife_days: float = 90.0  # notes age slowly: recency halves every 90 days


@dataclass(frozen=True, slots=True)
class RetrievedContext:
    query: str
    text: str
    tokens_used: int
    token_budget: int
    items: tuple[PackedItem, ...]
    candidates: int
    dropped: int
    tokenizer: str
    notes: tuple[str, ...] = ()

    @property
    def memory_ids(self) -> list[str]:
        return [i.memory_id for i in self.items if i.memory_id]

    def to_json(self, items: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "context": self.text,
            "tokens_used": self.tokens_used,
            "token_budget": self.token_budget,
            "tokenizer": self.tokenizer,
            "included": len(self.items),
            "candidates": self.candidates,
            "dropped": self.dropped,
        }
        if self.notes:
            data["notes"] = list(self.notes)
        if items:
            data["items"] = [i.to_json() for i in self.items]
        return data


def memory_retrieve(
    store: IndexedStore,
    query: str,
    token_budget: int = 3000,
    filters: RetrievalFilters | Mapping[str, Any] | None = None,
    *,
    ltm_index: Any = None,
    embedder: Any = None,
    include_history: bool = False,
    config: RetrievalConfig | None = None,
    counter: TokenCounter | None = None,
    use_embeddings: bool | None = None,
    now: float | None = None,
) -> RetrievedContext:
    """A sectioned text block within ``token_budget`` tokens (counted by ``counter``)."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("query must be a non-empty string")
    if (
        isinstance(token_budget, bool)
        or not isinstance(token_budget, int)
        or not (MIN_BUDGET <= token_budget <= MAX_BUDGET)
    ):
        raise InvalidInputError(
            f"token_budget must be an integer from {MIN_BUDGET} to "
            f"{MAX_BUDGET:,}, got {token_budget!r}"
        )
    if not isinstance(filters, RetrievalFilters):
        filters = RetrievalFilters.from_mapping(filters)
    cfg = config or RetrievalConfig()
    counter = counter or default_counter()
    ts = time.time() if now is None else now
    gather = _Gatherer(store, ltm_index, filters, cfg, ts, include_history)
    types = filters.memory_types
    if "core" in types:
        gather.core()
    if "stm" in types:
        gather.stm(query, use_embeddings)
    if "ltm" in types:
        gather.ltm(query, embedder)
    if "graph" in types:
        gather.graph(query)
    core, rest = gather.finish()
    ranked = order_by(cfg.weights.score, rest)
    packed = pack(
        core,
        ranked,
        token_budget,
        int(token_budget * cfg.core_share),
        counter,
        max_item_tokens=cfg.max_item_tokens,
        show_dates=cfg.show_dates,
    )
    return RetrievedContext(
        query,
        packed.text,
        packed.tokens,
        token_budget,
        packed.items,
        len(core) + len(rest),
        packed.dropped,
        counter.name,
        tuple(gather.notes),
    )


class _Gatherer:
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
        body = flatten(note.content)
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
        core = order_by(lambda c: c.score, [c for c in unique if c.tier == "core"])
        floor = self.filters.min_confidence
        rest = [c for c in unique if c.tier != "core" and (floor is None or c.score >= floor)]
        return core, rest


def _frequency(count: int) -> float:
    """log-scaled: 0 uses -> 0, 20+ uses (or backlinks) -> 1."""
    return min(1.0, math.log1p(max(0, count)) / math.log1p(20))


def _memory_recency(memories: Sequence[Memory | None], store: MemoryStore, now: float) -> float:
    scores = [memory_score(m, now, store.config.decay) for m in memories if m is not None]
    return min(1.0, max(scores, default=0.0))


__all__ = [
    "MEMORY_TYPES",
    "TIER_PRIORITY",
    "RetrievalConfig",
    "RetrievalFilters",
    "RetrievalWeights",
    "RetrievedContext",
    "memory_retrieve",
]
