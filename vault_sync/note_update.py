"""Updating a memory's note that already exists, without clobbering a person's edits.

The ledger says what body cortexgraph last wrote. Unchanged since: body and our frontmatter
fields are rewritten. Edited by a person: only our frontmatter fields and the managed Related
list follow the store; our newer body goes to a conflict copy beside the note (once per new
version). Broken frontmatter, or text that is not UTF-8: the note is not touched, our version
goes to a conflict copy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cortexgraph.vault_sync.atomic_file import atomic_write_text
from cortexgraph.vault_sync.ledger import LedgerEntry, WriteLedger
from cortexgraph.vault_sync.note_format import (
    LinkTarget,
    ParsedNote,
    RenderedNote,
    body_checksum,
    merge_metadata,
    note_text,
    parse_note_file,
    related_block,
    replace_related_block,
)
from cortexgraph.vault_sync.note_names import conflict_note_path
from cortexgraph.vault_sync.paths import relative_posix


@dataclass(frozen=True, slots=True)
class WrittenNote:
    """Same fields as agents.protocols.NoteRef, plus what else happened."""

    memory_id: str
    path: str  # relative to the vault root, forward slashes
    created: bool  # False when an existing note was updated
    body_kept: bool = False  # a person had edited the body; only frontmatter was updated
    conflict_path: str | None = None  # where our newer version went instead


def update_existing_note(
    vault: Path,
    existing: Path,
    memory_id: str,
    rendered: RenderedNote,
    links: Sequence[LinkTarget],
    ledger: WriteLedger,
    now: float,
    *,
    durable: bool = True,
    parsed: ParsedNote | None = None,
) -> tuple[WrittenNote, bool]:
    """Update ``existing`` (the note carrying ``memory_id``) to ``rendered``; returns what was
    written and whether the note itself was rewritten (False: broken frontmatter, untouched).
    ``parsed``: the note as the caller just read it under the same write lock (else read)."""
    rel = relative_posix(vault, existing)
    if parsed is None:
        parsed = parse_note_file(existing)  # not UTF-8: left as broken frontmatter is
    entry = ledger.get(memory_id)
    current_sum = body_checksum(parsed.body)
    new_sum = body_checksum(rendered.body)
    # No ledger entry (lost, or a note from another tool) counts as edited: be careful.
    edited = entry is None or current_sum != entry.body_checksum
    if current_sum == new_sum:
        edited = False
    if parsed.frontmatter_error is not None:
        # The person broke the YAML; rewriting it would drop whatever they meant to keep.
        conflict: str | None = write_conflict(
            vault, existing, rendered.metadata, rendered.body, now
        )
        ledger.set(memory_id, _with_conflict(entry, rel, now, new_sum))
        return WrittenNote(memory_id, rel, False, body_kept=True, conflict_path=conflict), False
    metadata = merge_metadata(parsed.metadata, rendered.metadata)
    for keep in ("created", "promoted_at"):  # first promotion's dates stay
        if parsed.metadata.get(keep):
            metadata[keep] = parsed.metadata[keep]
    if not edited:
        fresh = LedgerEntry(rel, new_sum, now)
        if _unchanged(parsed, metadata, rendered.body):
            # Only ``updated`` would change: the file stays as it is (no rewrite, no new mtime
            # for Obsidian or a sync client); ``updated`` is when the note last changed.
            if entry is None or replace(entry, written_at=now) != fresh:
                ledger.set(memory_id, fresh)
            return WrittenNote(memory_id, rel, created=False), True
        atomic_write_text(existing, note_text(metadata, rendered.body), durable=durable)
        ledger.set(memory_id, fresh)
        return WrittenNote(memory_id, rel, created=False), True
    # The person's body stays; only our managed Related list inside it follows the store.
    body = replace_related_block(parsed.body, related_block(links)) or parsed.body
    atomic_write_text(existing, note_text(metadata, body))
    conflict = None
    ours_changed = entry is None or new_sum != entry.body_checksum
    if ours_changed and (entry is None or entry.conflict_checksum != new_sum):
        conflict = write_conflict(vault, existing, rendered.metadata, rendered.body, now)
        entry = _with_conflict(entry, rel, now, new_sum)
    elif entry is not None:
        entry = LedgerEntry(rel, entry.body_checksum, now, entry.conflict_checksum)
    if entry is not None:
        ledger.set(memory_id, entry)
    return WrittenNote(memory_id, rel, False, body_kept=True, conflict_path=conflict), True


def _unchanged(parsed: ParsedNote, metadata: Mapping[str, Any], body: str) -> bool:
    """The note already says what we would write, but for its ``updated`` date."""
    if "updated" not in parsed.metadata or parsed.body.rstrip() != body.rstrip():
        return False
    theirs = {k: v for k, v in parsed.metadata.items() if k != "updated"}
    return theirs == {k: v for k, v in metadata.items() if k != "updated"}


def write_conflict(
    vault: Path, original: Path, metadata: Mapping[str, Any], body: str, now: float
) -> str:
    """Our version beside the person's note. It carries ``conflict_of`` instead of ``id`` so
    finding a memory's note by id never picks the copy."""
    path = conflict_note_path(original, now)
    meta = {("conflict_of" if k == "id" else k): v for k, v in metadata.items()}
    atomic_write_text(path, note_text(meta, body))
    return relative_posix(vault, path)


def _with_conflict(entry: LedgerEntry | None, rel: str, now: float, new_sum: str) -> LedgerEntry:
    base = entry.body_checksum if entry is not None else ""
    return LedgerEntry(rel, base, now, conflict_checksum=new_sum)


__all__ = ["WrittenNote", "update_existing_note", "write_conflict"]
