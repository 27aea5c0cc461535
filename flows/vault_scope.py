"""An incremental run's vault refresh: only the notes its changes can touch.

A full run refreshes every promoted note (vault_sync.refresh.refresh_notes: short titles,
Related lists, leaked Context sections, dead entity-note links). An incremental run refreshes
the notes of promoted memories that changed, that a relation made in this run reaches, or that
are related to a changed memory (their Related list names it); the weekly full run does the rest.
"""

from __future__ import annotations

from typing import Any

from cortexgraph.agents.pipeline import PipelineRun
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.storage.protocol import MemoryStore


def refresh_changed_notes(store: MemoryStore, sink: Any, run: PipelineRun, now: float) -> str:
    from cortexgraph.vault_sync.refresh import refresh_memory_note

    scope = run.pipeline.scope
    ids: set[str] = set(scope.changed) if scope is not None else set()
    for d in getattr(run.reports.get("relations"), "discovered", ()):
        ids.update((d.from_id, d.to_id))
    for p in getattr(run.reports.get("cluster"), "related", ()):
        ids.update((p.id1, p.id2))
    targets = set(ids)
    for memory_id in ids:
        for r in store.relations(memory_id=memory_id):
            targets.update((r.from_memory_id, r.to_memory_id))
    checked = updated = 0
    for memory in store.find_many(sorted(targets)):  # one look at the store files, not 130
        if memory.status is not MemoryStatus.PROMOTED:
            continue
        changed = refresh_memory_note(store, sink, memory, now=now)
        checked += 1
        updated += bool(changed and "related" in changed)
    return f"{checked} notes near what changed checked, {updated} Related lists updated"


__all__ = ["refresh_changed_notes"]
