"""The neighbour's text that notes written before 2.x kept it apart may show as a Context section.

Older versions stored the previous save's text as a memory's ``context``, and a promotion wrote
it into the note as ``## Context``. ``cortexgraph-maintenance repair-context`` moves it out of the
store (``Memory.neighbour_text``, a ranking signal); ``refresh_notes`` (``cortexgraph vault
refresh`` and every live pipeline run) then takes it out of the notes: a Context section that
reads exactly the text the memory's context was before that repair, and not its context now,
becomes the context now (removed when there is none). Nothing else in a note changes, and a
second run finds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from cortexgraph.storage.models import Memory, Relation
from cortexgraph.storage.protocol import MemoryStore

SECTION = "\n\n## Context\n\n"  # as vault_sync.note_format.render_note writes it
MAX_DEPTH = 20  # merges of merges, followed this deep


def _sources(
    store: MemoryStore, memory: Memory, relations: Sequence[Relation] | None
) -> list[Memory]:
    rels = store.relations(memory_id=memory.id) if relations is None else relations
    ids = dict.fromkeys(
        r.to_memory_id
        for r in rels
        if r.relation_type == "consolidated_from" and r.from_memory_id == memory.id
    )
    found = [m for m in map(store.find, ids) if m is not None and m.id != memory.id]
    return sorted(found, key=lambda s: (s.created_at, s.id))


def _former(
    store: MemoryStore, memory: Memory, depth: int, relations: Sequence[Relation] | None = None
) -> str | None:
    """The context ``memory`` had before the repair: the neighbour's text it moved, or for a
    merged memory its sources' former contexts joined as a merge joins them."""
    if memory.neighbour_text and not memory.meta.context:
        return memory.neighbour_text
    sources = _sources(store, memory, relations) if depth < MAX_DEPTH else []
    if sources:
        parts = (_former(store, s, depth + 1) for s in sources)
        return "\n".join(dict.fromkeys(p for p in parts if p)) or memory.meta.context
    return memory.meta.context


def leaked_context(
    store: MemoryStore, memory: Memory, relations: Sequence[Relation] | None = None
) -> str | None:
    """The text ``memory``'s note may show as its context although it is not (any longer) the
    memory's context, or None. ``relations``: the memory's own, when the caller has them."""
    former = _former(store, memory, 0, relations)
    if not former or not former.strip():
        return None
    return None if former.strip() == (memory.meta.context or "").strip() else former


def without_leaked_context(body: str, leaked: str, context: str | None) -> str | None:
    """``body`` with its Context section reading ``leaked`` replaced by ``context`` (removed
    when None), or None when the note has no such section."""
    section = SECTION + leaked.strip()
    start = body.find(section)
    while start != -1:
        end = start + len(section)
        rest = body[end:]
        if not rest.strip() or rest.startswith("\n\n## "):  # the whole section, nothing of ours
            kept = SECTION + context.strip() if context and context.strip() else ""
            return body[:start] + kept + rest
        start = body.find(section, start + 1)
    return None


__all__ = ["leaked_context", "without_leaked_context"]
