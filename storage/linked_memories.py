"""A memory's relations and the memories at their other ends, as its vault note lists them.

The LTM promoter, ``vault_sync.promote_memory`` and the note refresh hand a note's sink the
same two things: every relation of the memory, and every memory it relates to by id (merged,
archived sources too), in id order. One function, so the note is the same whichever path
writes it.
"""

from __future__ import annotations

from cortexgraph.storage.models import Memory, Relation
from cortexgraph.storage.protocol import MemoryStore


def linked_memories(store: MemoryStore, memory_id: str) -> tuple[list[Relation], list[Memory]]:
    """(the relations of ``memory_id``, the held memories at their other ends, by id)."""
    relations = store.relations(memory_id=memory_id)
    others = {r.other_end(memory_id) for r in relations} - {memory_id}
    return relations, store.find_many(sorted(others))


__all__ = ["linked_memories"]
