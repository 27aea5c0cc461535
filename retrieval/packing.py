"""Rendering candidates as compact lines and packing them greedily into a token budget."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cortexgraph.retrieval.tokens import TokenCounter
from cortexgraph.vault_sync.note_body import plain_text

SECTIONS = {  # section order in the block, and its header
    "core": "## core",
    "ltm": "## notes",
    "stm": "## memories",
    "graph": "## graph",
    "history": "## history (no longer current)",
}
MIN_TRUNCATED_TOKENS = 24  # below this a cut item says too little to be worth its header


@dataclass(slots=True)
class Candidate:
    """One thing that may go into the context (mutable while candidates are gathered)."""

    tier: str  # core | ltm | stm | graph | history
    key: str  # de-duplication key: memory id, note path, or a fact's triple
    ref: str  # what the text shows: m:<8 chars>, n:<path>
    body: str
    created_at: float = 0.0
    similarity: float = 0.0
    recency: float = 0.0
    frequency: float = 0.0
    score: float = 0.0
    memory_id: str | None = None
    note_path: str | None = None
    suffix: str = ""  # e.g. "until 2024-01-02, now m:…" for history
    fact: tuple[str, str, str] | None = None  # graph: (subject ref, predicate, object ref)
    labels: dict[str, str] = field(default_factory=dict)  # graph: ref -> label
    parts: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PackedItem:
    tier: str
    ref: str
    text: str
    tokens: int
    score: float
    memory_id: str | None
    note_path: str | None
    truncated: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "tier": self.tier,
            "ref": self.ref,
            "score": round(self.score, 4),
            "tokens": self.tokens,
            "memory_id": self.memory_id,
            "note_path": self.note_path,
            "truncated": self.truncated,
        }


def day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


flatten = plain_text  # one line, as a reader sees it: no comments, link brackets or '#'


def render(c: Candidate, shown: set[str], show_dates: bool, body: str | None = None) -> str:
    body = c.body if body is None else body
    if c.fact is not None:
        a, predicate, b = c.fact
        return f"- {_node(a, c, shown)} {predicate} {_node(b, c, shown)}"
    tag = c.ref
    if show_dates and c.created_at and c.note_path is None:  # notes: mtime is no fact date
        tag += f" {day(c.created_at)}"
    if c.suffix:
        tag += f" {c.suffix}"
    return f"- [{tag}] {body}"


def _node(ref: str, c: Candidate, shown: set[str]) -> str:
    label = c.labels.get(ref)
    return ref if ref in shown or not label else f'{ref} "{label}"'


@dataclass(frozen=True, slots=True)
class Packed:
    text: str
    tokens: int
    items: tuple[PackedItem, ...]
    dropped: int


def pack(
    core: Sequence[Candidate],
    ranked: Sequence[Candidate],
    budget: int,
    core_budget: int,
    counter: TokenCounter,
    *,
    max_item_tokens: int,
    show_dates: bool = True,
) -> Packed:
    """Core first within ``core_budget``, then the ranked rest within what is left."""
    chosen: list[tuple[Candidate, str, int, bool]] = []
    sections: set[str] = set()
    shown: set[str] = set()
    header_cost = {t: counter.count(h) for t, h in SECTIONS.items()}
    used = 0

    def take(c: Candidate, limit: int) -> bool:
        nonlocal used
        extra = 0 if c.tier in sections else header_cost[c.tier]
        room = min(limit - used - extra, max_item_tokens)
        line = render(c, shown, show_dates)
        cost = counter.count(line)
        truncated = False
        if cost > room:
            if c.fact is not None or room < MIN_TRUNCATED_TOKENS:
                return False
            stub = counter.count(render(c, shown, show_dates, body=""))
            body = counter.truncate(c.body, room - stub)
            if not body:
                return False
            line = render(c, shown, show_dates, body=body)
            cost, truncated = counter.count(line), True
            if cost > room:
                return False
        chosen.append((c, line, cost, truncated))
        sections.add(c.tier)
        shown.add(c.ref)
        used += cost + extra
        return True

    for c in core:
        take(c, min(core_budget, budget))
    dropped = sum(1 for c in core if c.ref not in shown)
    for c in ranked:
        if not take(c, budget):
            dropped += 1
    text, items = _assemble(chosen)
    tokens = counter.count(text)
    while tokens > budget and chosen:  # tokenizers that are not additive over lines
        chosen.pop()
        dropped += 1
        text, items = _assemble(chosen)
        tokens = counter.count(text)
    return Packed(text, tokens, items, dropped)


def _assemble(
    chosen: Sequence[tuple[Candidate, str, int, bool]],
) -> tuple[str, tuple[PackedItem, ...]]:
    lines: list[str] = []
    items: list[PackedItem] = []
    for tier, header in SECTIONS.items():
        group = [x for x in chosen if x[0].tier == tier]
        if not group:
            continue
        lines.append(header)
        for c, line, cost, truncated in group:
            lines.append(line)
            items.append(
                PackedItem(c.tier, c.ref, line, cost, c.score, c.memory_id, c.note_path, truncated)
            )
    return "\n".join(lines), tuple(items)


def order_by(
    score: Callable[[Candidate], float],
    cands: Sequence[Candidate],
    save_ranks: Mapping[str, int] | None = None,
) -> list[Candidate]:
    """Highest score first; a tie of one tier goes to the later save (``save_ranks``, the
    store's), the same in every process: the key (a random memory id) reordered a burst of
    one second's saves from run to run. Notes and facts (no memory) fall back to the key."""
    ranks = save_ranks or {}

    def saved(c: Candidate) -> int:
        return ranks.get(c.memory_id, -1) if c.memory_id is not None else -1

    return sorted(cands, key=lambda c: (-score(c), c.tier, -saved(c), c.key))


__all__ = ["SECTIONS", "Candidate", "Packed", "PackedItem", "day", "flatten", "pack", "render"]
