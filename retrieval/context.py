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
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cortexgraph.retrieval.candidates import TIER_PRIORITY, CandidateGatherer
from cortexgraph.retrieval.packing import Candidate, PackedItem, order_by, pack
from cortexgraph.retrieval.tokens import TokenCounter, default_counter
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.indexed_store import IndexedStore

MEMORY_TYPES = ("core", "ltm", "stm", "graph")
MIN_BUDGET, MAX_BUDGET = 20, 200_000


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
    gather = CandidateGatherer(store, ltm_index, filters, cfg, ts, include_history)
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
    ranked, repeats = _without_near_duplicates(order_by(cfg.weights.score, rest, gather.save_ranks))
    if repeats:
        gather.notes.append(f"{repeats} near-duplicate(s) of a higher-ranked item left out")
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


_WORD = re.compile(r"\w+")
NEAR_DUPLICATE = 0.85  # word-set overlap: a restatement, not a changed value ("16" vs "17")


def _without_near_duplicates(ranked: list[Candidate]) -> tuple[list[Candidate], int]:
    """Memories and notes that restate a higher-ranked one (word-set Jaccard >= 0.85, 4+ words,
    the same numbers) are left out: the budget goes to what is different (LatentContext's
    dedup); a changed number ("16" vs "17") is a different fact."""
    kept: list[Candidate] = []
    seen: list[tuple[frozenset[str], frozenset[str]]] = []
    for c in ranked:
        words = frozenset(_WORD.findall(c.body.lower()))
        numbers = frozenset(w for w in words if any(ch.isdigit() for ch in w))
        if c.tier in ("stm", "ltm") and len(words) >= 4:
            if any(
                numbers == n and len(words & w) / len(words | w) >= NEAR_DUPLICATE for w, n in seen
            ):
                continue  # the same words and the same numbers: said before
            seen.append((words, numbers))
        kept.append(c)
    return kept, len(ranked) - len(kept)


__all__ = [
    "MEMORY_TYPES",
    "RetrievalConfig",
    "RetrievalFilters",
    "RetrievalWeights",
    "RetrievedContext",
    "memory_retrieve",
]
