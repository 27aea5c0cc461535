"""The memory saved just before, per conversation: the context a save gets for free.

An assistant saves turns one by one, with their text alone. What was said just before is
what a turn answers or follows up ("Yes, the one in Oslo"), so the server hands each save
the previous memory of the same conversation as its context, indexed as the memory's
context field (BM25 at a lower weight, and embedded with the content). Measured on LoCoMo
dev (docs/retrieval.md), the turn before alone beats the turns before and after (R@5 0.681
against 0.671) and never rewrites the earlier memory. Only memories saved within
``window_s`` of each other count: a fact saved the next morning does not follow last
night's turn.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

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
        self.window_s = window_s
        self._last: OrderedDict[str, Neighbour] = OrderedDict()
        self._max = max_conversations
        self._lock = threading.Lock()

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


__all__ = ["NEIGHBOUR_CHARS", "Neighbour", "RecentSaves", "clip"]
