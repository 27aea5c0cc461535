"""Removing what cortexgraph wrote to a vault (memory_wipe), never what a person wrote or edited.

Two kinds of note are cortexgraph's:

- memory notes, each in the write ledger with the checksum of the body as written: deleted when
  the body is still that (the managed Related list may differ; it is ours to update);
- entity notes (``<folder>/entities/<entity>.md``, vault_sync.entity_notes), which the ledger
  does not list: deleted only when the whole file is exactly what cortexgraph writes (its
  frontmatter, heading and "Mentioned in:" line, byte for byte) and the managed block holds
  nothing but ``- [[stem]]`` lines naming notes in the ledger. Text outside the block, a
  changed property, a link a person added to the block: the note is theirs and stays.

A line a person deleted from an entity note's block cannot be told from one never written; such
a note is removed like an untouched one (it still holds nothing of theirs).
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from filelock import FileLock, Timeout

from cortexgraph.vault_sync.entity_notes import BLOCK_END, BLOCK_START
from cortexgraph.vault_sync.errors import VaultWriteError
from cortexgraph.vault_sync.ledger import STATE_DIR, WriteLedger
from cortexgraph.vault_sync.note_format import (
    body_checksum,
    markdown_text,
    note_text,
    parse_note_text,
)
from cortexgraph.vault_sync.note_names import ENTITY_FOLDER
from cortexgraph.vault_sync.paths import iter_markdown_files, relative_posix

LOCK_TIMEOUT_S = 30.0  # a promotion holds the write lock for one note at a time
_LINK_LINE = re.compile(r"- \[\[([^\[\]|#\n]+)\]\]")


@dataclass(slots=True)
class RemovedNotes:
    deleted: list[str] = field(default_factory=list)  # memory notes, vault-relative
    kept: list[str] = field(default_factory=list)  # memory notes a person edited
    entity_deleted: list[str] = field(default_factory=list)
    entity_kept: list[str] = field(default_factory=list)  # entity notes a person edited


def unedited_entity(text: str, known_stems: set[str]) -> str | None:
    """The entity of an entity note that is exactly as cortexgraph writes it and links only to
    ``known_stems`` (notes cortexgraph wrote); None for anything else."""
    parsed = parse_note_text(text)
    meta = parsed.metadata
    own = meta.get("cortexgraph")
    if (
        parsed.frontmatter_error
        or not isinstance(own, dict)
        or set(meta) != {"title", "cortexgraph"}
    ):
        return None
    entity, version = own.get("entity"), own.get("version")
    if set(own) != {"version", "entity"} or not isinstance(entity, str) or meta["title"] != entity:
        return None
    normal = text.replace("\r\n", "\n")
    start = normal.find(f"\n{BLOCK_START}\n")
    end = normal.find(f"\n{BLOCK_END}\n", start + 1)
    if start < 0 or end < 0:
        return None
    lines = normal[start + len(BLOCK_START) + 2 : end].split("\n")
    stems = [m.group(1) if (m := _LINK_LINE.fullmatch(line)) else None for line in lines]
    if not stems or len(set(stems)) != len(stems) or not known_stems.issuperset(stems):
        return None  # a line that is not one of our links, or a link to a note not ours
    block = "\n".join(lines)
    body = f"# {markdown_text(entity)}\n\nMentioned in:\n\n{BLOCK_START}\n{block}\n{BLOCK_END}\n"
    written = note_text(
        {"title": entity, "cortexgraph": {"version": version, "entity": entity}}, body
    )
    return entity if normal.rstrip("\n") == written.rstrip("\n") else None


def remove_written_notes(vault: Path) -> RemovedNotes:
    """Delete the memory and entity notes cortexgraph wrote and nobody edited; keep the rest.
    Holds the vault's write lock, so no promotion writes meanwhile."""
    out = RemovedNotes()
    if not (vault / STATE_DIR).is_dir():
        return out  # cortexgraph never wrote here: no ledger, nothing of ours to tell apart
    try:
        with FileLock(str(vault / STATE_DIR / "write.lock"), timeout=LOCK_TIMEOUT_S):
            _remove_locked(vault, out)
    except Timeout as exc:
        raise VaultWriteError(
            f"the vault {vault} is being written by another cortexgraph process; "
            "no note was deleted, try again"
        ) from exc
    return out


def _remove_locked(vault: Path, out: RemovedNotes) -> None:
    ledger = WriteLedger(vault)
    root = vault.resolve()
    known_stems = {PurePosixPath(entry.path).stem for entry in ledger.entries.values()}
    emptied: set[Path] = set()  # folders we deleted from: removed too if nothing is left
    for memory_id, entry in sorted(ledger.entries.items()):
        path = (vault / entry.path).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            ledger.entries.pop(memory_id)
            continue
        try:
            body = parse_note_text(path.read_text(encoding="utf-8")).body
        except (OSError, UnicodeDecodeError):
            body = None  # unreadable as we wrote it: not ours to delete
        if body is None or body_checksum(body) != entry.body_checksum:
            out.kept.append(entry.path)  # a person edited it: theirs now
            continue
        path.unlink()
        out.deleted.append(entry.path)
        ledger.entries.pop(memory_id)
        emptied.add(path.parent)
    for path in iter_markdown_files(root):
        if path.parent.name != ENTITY_FOLDER:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        rel = relative_posix(root, path)
        if unedited_entity(text, known_stems) is not None:
            path.unlink()
            out.entity_deleted.append(rel)
            emptied.add(path.parent)
        elif BLOCK_START in text and "cortexgraph:" in text:
            out.entity_kept.append(rel)  # ours once, edited since (or linking to others' notes)
    for directory in sorted(emptied, key=lambda d: len(d.parts), reverse=True):
        if directory == root:
            continue
        with contextlib.suppress(OSError):
            directory.rmdir()  # only if nothing else is left in it
    ledger.save()
    (vault / STATE_DIR / "ltm-index.jsonl").unlink(missing_ok=True)  # rebuilt on next use


__all__ = ["RemovedNotes", "remove_written_notes", "unedited_entity"]
