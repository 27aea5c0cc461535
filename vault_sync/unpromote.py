"""unpromote_memory: the reverse of promote_memory. The note goes to the vault's ``.trash/``
folder (Obsidian's own trash: recoverable, never indexed), the memory back to short-term, and
the links promotion made to the note go with it: its line in each entity note's list, and its
entry in the Related lists of the notes of related promoted memories. A person's own links to
it are theirs (``cortexgraph vault check`` names them)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import Memory, MemoryMeta, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore
from cortexgraph.vault_sync.atomic_file import move_file
from cortexgraph.vault_sync.note_names import names_in_vault, unique_note_path
from cortexgraph.vault_sync.note_sink import ObsidianNoteSink
from cortexgraph.vault_sync.paths import relative_posix
from cortexgraph.vault_sync.refresh import refresh_memory_note

TRASH_DIR = ".trash"


@dataclass(frozen=True, slots=True)
class UnpromoteOutcome:
    memory_id: str
    trashed_to: str | None  # vault-relative path in .trash/, None if no note was found
    note_was: str | None
    links_removed: int = 0  # entity-note lines and Related lists that linked to the note

    def to_json(self) -> dict[str, str | int | None]:
        return {
            "memory_id": self.memory_id,
            "trashed_to": self.trashed_to,
            "note_was": self.note_was,
            "links_removed": self.links_removed,
        }

    def as_undo(self) -> dict[str, object]:
        """The outcome as an undo answers it (the MCP tool and the web view)."""
        return {
            "action": "promote",
            "memory_ids": [self.memory_id],
            **self.to_json(),
            "detail": f"memory {self.memory_id} is short-term again",
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
        move_file(note, target)
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
    # The entity notes list the name promotion gave the note: a person may have deleted the
    # note since, or renamed it outside Obsidian (which leaves the links to the old name).
    stems = {Path(p).stem for p in (memory.promoted_to,) if p}
    stems |= {note.stem} if note is not None else set()
    removed = _unlink(store, sink, memory_id, stems, now=now) if stems else 0
    return UnpromoteOutcome(memory_id, trashed, memory.promoted_to, removed)


def _unlink(
    store: MemoryStore, sink: ObsidianNoteSink, memory_id: str, stems: set[str], *, now: float
) -> int:
    """Take out the links promotion made to the note once called any of ``stems`` (a link
    that still opens a note of that name elsewhere in the vault stays)."""
    names = names_in_vault(sink.vault)
    gone = {stem.lower() for stem in stems} - names
    removed = sink.prune_entity_links(lambda s: s.lower() in gone)
    others = {r.other_end(memory_id) for r in store.relations(memory_id=memory_id)} - {memory_id}
    with sink:
        for other in sorted(others):
            found = store.find(other)
            if found is not None and found.status is MemoryStatus.PROMOTED:
                changed = refresh_memory_note(store, sink, found, now=now)
                removed += bool(changed and "related" in changed)
    return removed


__all__ = ["TRASH_DIR", "UnpromoteOutcome", "unpromote_memory"]
