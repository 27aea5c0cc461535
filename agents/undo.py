"""Reversing what the agents did on their own: merges, archives and garbage collection.

Every reversal writes the restored record with ``meta.extra["undo"]`` (what, when, why), so
``agents.history`` can show it next to the change it reverses. Unpromoting touches the vault
and lives in ``vault_sync.unpromote``. Errors say what to do instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cortexgraph.agents.common import RefusedError
from cortexgraph.agents.merge_ops import PROVENANCE_KEY, undo_merge
from cortexgraph.storage.decay import DAY
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import (
    Memory,
    MemoryMeta,
    MemoryStatus,
    Relation,
    validate_id,
)
from cortexgraph.storage.protocol import MemoryStore

UNDO_KEY = "undo"
GC_KEY = "gc"


class Graveyard(Protocol):
    """Where gc puts what it deletes (storage.graveyard.Graveyard is the real one)."""

    def bury(
        self, memory: Memory, relations: Sequence[Relation], *, now: float, cause: str
    ) -> None: ...

    def find(self, memory_id: str) -> Any: ...

    def mark_restored(self, memory_id: str, *, now: float) -> None: ...


@dataclass(frozen=True, slots=True)
class UndoResult:
    action: str  # merge | archive | gc
    memory_ids: tuple[str, ...]  # the memories now active again
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "memory_ids": list(self.memory_ids), "detail": self.detail}


def with_extra(memory: Memory, drop: Sequence[str] = (), **extra: Any) -> MemoryMeta:
    kept = {k: v for k, v in memory.meta.extra.items() if k not in drop}
    return MemoryMeta(memory.tags, memory.meta.source, memory.meta.context, {**kept, **extra})


def held_by_undo(memory: Memory) -> bool:
    """True while a person's undo stands: the memory carries an undo marker and has not been
    used since. The agents leave such a memory as the undo left it (no promotion, merge or gc
    of it) until it changes again; then it is judged like any other."""
    marker = memory.meta.extra.get(UNDO_KEY)
    if not isinstance(marker, dict):
        return False
    at = marker.get("at")
    return isinstance(at, int | float) and memory.last_used <= at


def _marker(event: str, now: float, cause: str) -> dict[str, Any]:
    return {"event": event, "at": int(now), "cause": cause}


def undo_merge_of(
    store: MemoryStore, merged_id: str, *, now: float, cause: str = "undo by a person"
) -> UndoResult:
    """The merge that made ``merged_id`` reversed: sources active again, relations back."""
    merged = store.get(merged_id)
    if PROVENANCE_KEY not in merged.meta.extra:
        into = merged.meta.extra.get("merged_into")
        hint = f"; it was merged into {into}: undo that one" if into else ""
        raise RefusedError(f"memory {merged_id} was not made by a merge{hint}")
    if merged.status is MemoryStatus.PROMOTED:
        raise RefusedError(
            f"memory {merged_id} was promoted to the vault since; unpromote "
            f"{merged_id} first, then undo the merge"
        )
    _check_merge_record(store, merged)
    marker = _marker("merge undone", now, f"{cause}: merge {merged_id} reversed")
    sources = undo_merge(store, merged_id, now=now, dry_run=False, mark={UNDO_KEY: marker})
    return UndoResult("merge", sources, f"merge {merged_id} undone; {len(sources)} sources back")


def _check_merge_record(store: MemoryStore, merged: Memory) -> None:
    """The merge record is well formed and every source it names was archived by this merge
    (``merged_into`` = the merged id): a forged record (an imported memory, say) cannot make an
    undo change unrelated memories."""
    provenance = merged.meta.extra.get(PROVENANCE_KEY)
    entries = provenance.get("sources") if isinstance(provenance, dict) else None
    if not isinstance(entries, list) or not entries:
        raise RefusedError(f"memory {merged.id} has no readable merge record; nothing undone")
    for entry in entries:
        sid = entry.get("id") if isinstance(entry, dict) else None
        status = entry.get("status") if isinstance(entry, dict) else None
        if not isinstance(sid, str) or status not in {s.value for s in MemoryStatus}:
            raise RefusedError(f"memory {merged.id}'s merge record is damaged; nothing undone")
        source = store.find(sid) if _well_formed_id(sid) else None
        if source is not None and source.meta.extra.get("merged_into") != merged.id:
            raise RefusedError(
                f"memory {merged.id}'s merge record names {sid}, which was not merged into "
                "it; nothing undone"
            )


def _well_formed_id(text: str) -> bool:
    try:
        validate_id(text)
    except InvalidInputError:
        return False
    return True


def unarchive(
    store: MemoryStore, memory_id: str, *, now: float, cause: str = "undo by a person"
) -> UndoResult:
    """An archived memory active again (archived by gc or by hand; merges are undone whole).
    Checked and written under one hold of the store's lock, so a change made meanwhile by
    another process is neither lost nor undone blind."""

    def change(memory: Memory) -> Memory:
        if memory.status is not MemoryStatus.ARCHIVED:
            raise RefusedError(
                f"memory {memory_id} is {memory.status.value}, not archived; nothing to unarchive"
            )
        into = memory.meta.extra.get("merged_into")
        if into:
            raise RefusedError(
                f"memory {memory_id} was archived by the merge into {into}; undo "
                f"merge {into} to restore all of its sources"
            )
        marker = _marker("unarchived", now, cause)
        meta = with_extra(memory, (GC_KEY,), **{UNDO_KEY: marker})
        return memory.with_changes(status=MemoryStatus.ACTIVE, meta=meta)

    store.modify(memory_id, change)
    return UndoResult("archive", (memory_id,), f"memory {memory_id} is active again")


def restore_collected(
    store: MemoryStore,
    graveyard: Graveyard,
    memory_id: str,
    *,
    now: float,
    cause: str = "undo by a person",
) -> UndoResult:
    """Bring back a memory gc took: archived in its grace period, or deleted after it."""
    memory = store.find(memory_id)
    if memory is not None:
        if memory.status is MemoryStatus.ARCHIVED and GC_KEY in memory.meta.extra:
            result = unarchive(store, memory_id, now=now, cause=cause)
            return UndoResult(
                "gc",
                result.memory_ids,
                f"memory {memory_id} taken back from gc (it was archived, inside its grace period)",
            )
        raise RefusedError(
            f"memory {memory_id} is {memory.status.value} and was not collected "
            "by gc; nothing to restore"
        )
    grave = graveyard.find(memory_id)
    if grave is None or grave.restored_at is not None:
        raise RefusedError(
            f"no memory {memory_id} in the store or among what gc removed "
            "(check the id in its history)"
        )
    marker = _marker("restored from gc", now, cause)
    old = grave.memory
    store.put(
        old.with_changes(
            status=MemoryStatus.ACTIVE, meta=with_extra(old, (GC_KEY,), **{UNDO_KEY: marker})
        )
    )
    back = 0
    for rel in grave.relations:
        if store.find(rel.from_memory_id) and store.find(rel.to_memory_id):
            store.put_relation(rel)
            back += 1
    graveyard.mark_restored(memory_id, now=now)
    return UndoResult(
        "gc", (memory_id,), f"memory {memory_id} restored from gc with {back} relation(s)"
    )


@dataclass(frozen=True, slots=True)
class GcResult:
    archived: tuple[str, ...]  # archived this run (the grace period starts)
    purged: tuple[str, ...]  # deleted this run (archived by gc longer than the grace period)


def _gc_due(memory: Memory, cutoff: float) -> bool:
    """Archived by gc at or before ``cutoff`` (and still archived)."""
    mark = memory.meta.extra.get(GC_KEY)
    return (
        memory.status is MemoryStatus.ARCHIVED
        and isinstance(mark, dict)
        and float(mark.get("archived_at", cutoff + 1)) <= cutoff
    )


def collect_garbage(
    store: MemoryStore,
    candidates: Sequence[str],
    *,
    delete: bool,
    now: float,
    grace_days: float,
    graveyard: Graveyard | None = None,
    dry_run: bool = False,
) -> GcResult:
    """Archive ``candidates`` (marked ``extra.gc``); with ``delete``, also delete what gc
    archived at least ``grace_days`` ago, after putting it in the graveyard."""
    due = []
    if delete:
        cutoff = now - grace_days * DAY
        due = [m for m in store.list(status=MemoryStatus.ARCHIVED) if _gc_due(m, cutoff)]
    if dry_run:
        return GcResult(tuple(candidates), tuple(m.id for m in due))
    mode = "delete" if delete else "archive"

    def archive(memory: Memory) -> Memory | None:
        if memory.status is not MemoryStatus.ACTIVE or held_by_undo(memory):
            return None
        mark = {"archived_at": int(now), "mode": mode}
        return memory.with_changes(
            status=MemoryStatus.ARCHIVED, meta=with_extra(memory, (), **{GC_KEY: mark})
        )

    # Each record is read and written under one hold of the lock: a memory used (or
    # unarchived) by another process meanwhile is judged as it is now, never written back stale.
    archived = [m.id for m in store.modify_many(candidates, archive)]
    purged = []
    for stale in due:
        with store.writing():
            memory = store.find(stale.id)
            if memory is None or not _gc_due(memory, now - grace_days * DAY):
                continue
            if graveyard is not None:
                graveyard.bury(
                    memory,
                    store.relations(memory_id=memory.id),
                    now=now,
                    cause=f"gc: archived {int(grace_days)}+ days below the forget threshold",
                )
            store.delete(memory.id)
        purged.append(memory.id)
    return GcResult(tuple(archived), tuple(purged))


__all__ = [
    "GC_KEY",
    "UNDO_KEY",
    "GcResult",
    "Graveyard",
    "UndoResult",
    "collect_garbage",
    "held_by_undo",
    "restore_collected",
    "unarchive",
    "undo_merge_of",
    "with_extra",
]
