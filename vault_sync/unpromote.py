"""unpromote_memory: the reverse of promote_memory. The note goes to the vault's ``.trash/``
folder (Obsidian's own trash: recoverable, never indexed), the memory back to short-term."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import Memory, MemoryMeta, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore
from cortexgraph.vault_sync.note_sink import ObsidianNoteSink
from cortexgraph.vault_sync.paths import relative_posix, unique_note_path

TRASH_DIR = ".trash"


@dataclass(frozen=True, slots=True)
class UnpromoteOutcome:
    memory_id: str
    trashed_to: str | None  # vault-relative path in .trash/, None if no note was found
    note_was: str | None

    def to_json(self) -> dict[str, str | None]:
        return {
            "memory_id": self.memory_id,
            "trashed_to": self.trashed_to,
            "note_was": self.note_was,
        }


def unpromote_memory(
    store: MemoryStore,
    vault: str | os.PathLike[str],
    memory_id: str,
    *,
    folder: str = "cortexgraph",
    now: float,
    cause: str = "undo by a person",
) -> UnpromoteOutcome:
    """Move ``memory_id``'s note to ``<vault>/.trash/`` and make the memory active again."""
    memory = store.get(memory_id)
    if memory.status is not MemoryStatus.PROMOTED:
        raise InvalidInputError(
            f"memory {memory_id} is {memory.status.value}, not promoted; nothing to unpromote"
        )
    sink = ObsidianNoteSink(vault, folder, create=False)
    note = sink.find_note(memory_id, memory.promoted_to)
    trashed = None
    if note is not None:
        trash = sink.vault / TRASH_DIR
        trash.mkdir(parents=True, exist_ok=True)
        target = unique_note_path(trash, Path(note.name).stem)
        os.replace(note, target)
        trashed = relative_posix(sink.vault, target)
    marker = {
        "event": "unpromoted",
        "at": int(now),
        "cause": f"{cause}; note moved to {trashed}" if trashed else cause,
    }

    def active_again(current: Memory) -> Memory:
        # The record as stored now, under the lock: a use recorded meanwhile is kept.
        extra = {**current.meta.extra, "undo": marker}
        return current.with_changes(
            status=MemoryStatus.ACTIVE,
            promoted_at=None,
            promoted_to=None,
            meta=MemoryMeta(current.tags, current.meta.source, current.meta.context, extra),
        )

    store.modify(memory_id, active_again)
    return UnpromoteOutcome(memory_id, trashed, memory.promoted_to)


__all__ = ["TRASH_DIR", "UnpromoteOutcome", "unpromote_memory"]
