"""The memory saved just before, per conversation: a ranking signal a save gets for free.

An assistant saves turns one by one, with their text alone. What was said just before is
what a turn answers or follows up ("Yes, the one in Oslo"), so the server hands each save
the previous memory of the same conversation as its neighbour: ``Memory.neighbour_text``,
ranked with the memory (BM25's context field at a lower weight, and embedded with the
content: ``Memory.ranking_context``) but never the user's ``meta.context``: it is not shown
in results, merged, or written to a note. Measured on LoCoMo dev (docs/retrieval.md), the
turn before alone beats the turns before and after (R@5 0.681 against 0.671) and never
rewrites the earlier memory. Only memories saved within ``window_s`` of each other count: a
fact saved the next morning does not follow last night's turn.

Before, the neighbour's text went into ``meta.context``; ``repair_neighbour_contexts`` (run by
``cortexgraph-maintenance repair-context``) moves it out of the memories saved that way.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from cortexgraph.storage.models import Memory
from cortexgraph.storage.protocol import MemoryStore

log = logging.getLogger(__name__)

# Each side of a derived context is cut here, so a long neighbour never dwarfs the memory.
NEIGHBOUR_CHARS = 600


@dataclass(frozen=True, slots=True)
class Neighbour:
    memory_id: str
    content: str
    saved_at: float


class RecentSaves:
    """Thread-safe map of conversation key -> the last memory saved in it."""

    def __init__(self, window_s: float, max_conversations: int = 1024) -> None:
        self.window_s = window_s  # negative: no save has a neighbour
        self._last: OrderedDict[str, Neighbour] = OrderedDict()
        self._max = max_conversations
        self._lock = threading.Lock()

    @classmethod
    def configured(cls, enabled: bool, window_s: float) -> RecentSaves:
        """As the settings say (``save_neighbour_context``, ``save_context_window_s``)."""
        return cls(window_s if enabled else -1)

    def previous(self, conversation: str, now: float) -> Neighbour | None:
        """The memory saved just before in ``conversation``, if recent enough."""
        with self._lock:
            last = self._last.get(conversation)
        if last is None or not 0 <= now - last.saved_at <= self.window_s:
            return None
        return last

    def record(self, conversation: str, neighbour: Neighbour) -> None:
        with self._lock:
            self._last[conversation] = neighbour
            self._last.move_to_end(conversation)
            while len(self._last) > self._max:
                self._last.popitem(last=False)


def clip(text: str, limit: int = NEIGHBOUR_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def save_with_neighbour(
    store: MemoryStore,
    recent: RecentSaves,
    conversation: str,
    content: str,
    *,
    now: float,
    context: str | None = None,
    **fields: Any,
) -> Memory:
    """``store.save`` of one turn of ``conversation`` as ``save_memory`` saves it: the memory
    saved just before in it (within ``recent.window_s``) as its neighbour, cut to
    ``NEIGHBOUR_CHARS`` and the store's context limit; none where the caller gave a
    ``context`` of its own. The turn is then the next one's neighbour."""
    before = recent.previous(conversation, now) if context is None else None
    limit = min(NEIGHBOUR_CHARS, store.config.max_context_chars)
    memory = store.save(
        content,
        context=context,  # the caller's own, or none: never the neighbour's text
        now=now,
        neighbour=None if before is None else clip(before.content, limit),
        **fields,
    )
    recent.record(conversation, Neighbour(memory.id, content, now))
    return memory


@dataclass(frozen=True, slots=True)
class ContextRepair:
    """What ``repair_neighbour_contexts`` did (or would do, on a dry run)."""

    scanned: int
    moved: tuple[str, ...]  # context was the memory saved before: now its neighbour_text
    merged: tuple[str, ...]  # merged memories whose context joined such contexts: rewritten
    dry_run: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "scanned": self.scanned,
            "contexts_moved": len(self.moved),
            "merged_contexts_cleaned": len(self.merged),
            "memory_ids": [*self.moved, *self.merged],
        }


def _union(values: Iterable[str | None]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def repair_neighbour_contexts(
    store: MemoryStore, window_s: float, *, dry_run: bool = False
) -> ContextRepair:
    """Move the neighbour's text out of the ``context`` of memories saved before it had a field
    of its own. A memory's context is moved to ``neighbour_text`` (it keeps ranking, no longer
    shows) when it is the text of a memory saved up to ``window_s`` before it (cut at
    ``NEIGHBOUR_CHARS`` as the server cut it); a merged memory (``consolidated_from`` its
    sources) whose context is exactly its sources' contexts joined, as a merge writes it, gets
    the join of what is left of them. Nothing else changes; a second run finds nothing."""
    memories = {m.id: m for m in store.list()}
    saved_at: dict[str, list[tuple[int, str]]] = {}
    for m in memories.values():
        saved_at.setdefault(clip(m.content).strip(), []).append((m.created_at, m.id))

    def was_neighbour(m: Memory) -> bool:
        context = m.meta.context
        if not context or m.neighbour_text is not None:
            return False
        return any(
            pid != m.id and 0 <= m.created_at - t <= window_s
            for t, pid in saved_at.get(context.strip(), ())
        )

    moved = {mid for mid, m in memories.items() if was_neighbour(m)}
    cleaned: dict[str, str | None] = {}

    def user_context(mid: str, depth: int = 0) -> str | None:
        """``mid``'s context once the neighbours' texts are out of it (merges recursively)."""
        if mid in moved:
            return None
        if mid not in cleaned:
            m = memories[mid]
            cleaned[mid] = m.meta.context
            sources = sorted(
                (
                    memories[r.to_memory_id]
                    for r in store.relations(memory_id=mid)
                    if r.relation_type == "consolidated_from"
                    and r.from_memory_id == mid
                    and r.to_memory_id in memories
                ),
                key=lambda s: (s.created_at, s.id),
            )
            joined = "\n".join(_union(s.meta.context for s in sources))
            if sources and depth < 20 and m.meta.context and m.meta.context == joined:
                kept = "\n".join(_union(user_context(s.id, depth + 1) for s in sources))
                cleaned[mid] = kept or None
        return cleaned[mid]

    merged = sorted(
        mid
        for mid, m in memories.items()
        if mid not in moved and m.meta.context and user_context(mid) != m.meta.context
    )
    if not dry_run:
        plan = {mid: (memories[mid].meta.context, user_context(mid)) for mid in [*moved, *merged]}

        with store.writing():  # read again under the lock: no other writer in between
            current = [m for m in map(store.find, sorted(plan)) if m is not None]
            store.put_many(
                replace(
                    m,
                    meta=replace(m.meta, context=plan[m.id][1]),
                    neighbour_text=m.meta.context if m.id in moved else m.neighbour_text,
                )
                for m in current
                if m.meta.context == plan[m.id][0]  # else changed since: left for next run
            )
    log.info(
        "context repair: %s %d neighbour context(s) to neighbour_text and %d merged context(s) "
        "of %d memories",
        "would move" if dry_run else "moved",
        len(moved),
        len(merged),
        len(memories),
    )
    return ContextRepair(len(memories), tuple(sorted(moved)), tuple(merged), dry_run)


__all__ = [
    "NEIGHBOUR_CHARS",
    "ContextRepair",
    "Neighbour",
    "RecentSaves",
    "clip",
    "repair_neighbour_contexts",
    "save_with_neighbour",
]
