"""What a later pipeline run does for notes promoted earlier: give them their short titles
(renaming legacy names, links updated) and bring their managed Related lists up to date with
the store's relations and merges. A person's text is never touched (ObsidianNoteSink.refresh_note).
A Context section that shows the previous memory's text (written before it had a field of its
own; ``cortexgraph-maintenance repair-context`` moves it out of the store) is taken out:
vault_sync.leaked_context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cortexgraph.storage.linked_memories import linked_memories
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore
from cortexgraph.vault_sync.leaked_context import leaked_context
from cortexgraph.vault_sync.note_names import names_in_vault


@dataclass
class RefreshReport:
    checked: int = 0
    renamed: list[tuple[str, str]] = field(default_factory=list)  # (old path, new path)
    related_updated: int = 0
    contexts_removed: int = 0  # Context sections that showed the previous memory's text
    dead_mentions_removed: int = 0  # entity-note links to notes that are gone

    def summary(self) -> str:
        return (
            f"{self.checked} notes checked, {len(self.renamed)} renamed to short titles, "
            f"{self.related_updated} Related lists updated, "
            f"{self.contexts_removed} leaked Context sections removed, "
            f"{self.dead_mentions_removed} broken entity-note links removed"
        )


def refresh_notes(store: MemoryStore, sink: Any, *, now: float) -> RefreshReport:
    report = RefreshReport()
    before = len(sink.renamed)
    for memory in sorted(store.list(status=MemoryStatus.PROMOTED), key=lambda m: m.id):
        changed = refresh_memory_note(store, sink, memory, now=now)
        report.checked += 1
        if changed and "context" in changed:
            report.contexts_removed += 1
        if changed and "related" in changed:
            report.related_updated += 1
    report.renamed = [(r.old_path, r.new_path) for r in sink.renamed[before:]]
    # Entity notes list the notes that mention them; a note unpromoted (or deleted, or
    # renamed by hand) leaves a link there that opens nothing: it goes, nothing else does.
    if hasattr(sink, "prune_entity_links"):
        names = names_in_vault(sink.vault)
        report.dead_mentions_removed = sink.prune_entity_links(
            lambda stem: stem.lower() not in names
        )
    return report


def refresh_memory_note(store: MemoryStore, sink: Any, memory: Memory, *, now: float) -> str | None:
    """One promoted memory's note brought up to date (sink.refresh_note); what changed."""
    relations, related = linked_memories(store, memory.id)
    changed: str | None = sink.refresh_note(
        memory,
        related=related,
        relations=relations,
        now=now,
        leaked_context=leaked_context(store, memory, relations),
    )
    if changed and "renamed" in changed and memory.promoted_to:
        moved = sink.renamed[-1]
        if moved.new_path != memory.promoted_to:
            store.update(memory.id, promoted_to=moved.new_path)
    return changed


__all__ = ["RefreshReport", "refresh_memory_note", "refresh_notes"]
