"""Memories in time order, ties within one second broken by the store's save order.

``created_at`` is whole seconds, so a burst of saves shares one; the random id broke those
ties differently from one run to the next. The store's save order (``MemoryStore.save_ranks``)
is the same in every process, after a reopen and after compaction.
"""

from __future__ import annotations

from collections.abc import Iterable

from cortexgraph.storage.models import Memory
from cortexgraph.storage.protocol import MemoryStore


def newest_first(store: MemoryStore, memories: Iterable[Memory]) -> list[Memory]:
    """``memories`` newest first; within one second of ``created_at``, the later save first."""
    found = list(memories)
    rank = store.save_ranks(m.id for m in found)
    return sorted(found, key=lambda m: (-m.created_at, -rank.get(m.id, -1)))


def oldest_first(store: MemoryStore, memories: Iterable[Memory]) -> list[Memory]:
    """``memories`` oldest first; within one second of ``created_at``, the earlier save first."""
    found = list(memories)
    rank = store.save_ranks(m.id for m in found)
    return sorted(found, key=lambda m: (m.created_at, rank.get(m.id, -1)))


__all__ = ["newest_first", "oldest_first"]
