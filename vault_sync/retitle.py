"""Renaming notes named the old way (the memory's first ~80 characters, cut with "…") to their
short titles, with every [[link]] to them updated.

A note is renamed only if cortexgraph named it: its ledger entry points at it and its stem is
still the legacy name (a person's own renaming is kept). Renaming moves the file whole, so no
edit is lost; the old name stays an alias, so search and old links in other tools still find it.
Links are rewritten the way Obsidian does on a rename (``[[Old]]``, ``[[Old|label]]``,
``[[Old#heading]]``); a note we manage whose body was untouched keeps counting as untouched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cortexgraph.storage.models import Memory
from cortexgraph.vault_sync.atomic_file import atomic_write_text
from cortexgraph.vault_sync.ledger import LedgerEntry, WriteLedger
from cortexgraph.vault_sync.note_format import body_checksum, note_text, parse_note_text
from cortexgraph.vault_sync.note_names import is_legacy_name, note_name, unique_note_path
from cortexgraph.vault_sync.paths import iter_markdown_files, relative_posix


@dataclass(frozen=True, slots=True)
class Renamed:
    memory_id: str
    old_path: str
    new_path: str
    links_updated: int  # notes whose links were rewritten


def retitle_note(
    vault: Path, path: Path, memory: Memory, ledger: WriteLedger, now: float
) -> Renamed | None:
    """Rename the note at ``path`` to ``memory``'s short title if it still has the legacy name
    cortexgraph gave it; update links. None when nothing was renamed."""
    entry = ledger.get(memory.id)  # the name first: resolving the path costs more
    if entry is None or not is_legacy_name(memory, path.stem):
        return None
    rel = relative_posix(vault, path)
    if entry.path != rel:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:  # another encoding: not ours to rewrite (note_update)
        return None
    target = unique_note_path(path.parent, note_name(memory).stem)
    old_stem = path.stem
    parsed = parse_note_text(text)
    if parsed.has_frontmatter and parsed.frontmatter_error is None:
        meta = dict(parsed.metadata)
        aliases = [str(a) for a in meta.get("aliases") or [] if a]
        meta["aliases"] = list(dict.fromkeys([*aliases, old_stem]))
        meta["title"] = target.stem
        text = note_text(meta, parsed.body)
    atomic_write_text(target, text)
    path.unlink()
    new_rel = relative_posix(vault, target)
    ledger.set(memory.id, LedgerEntry(new_rel, entry.body_checksum, now, entry.conflict_checksum))
    updated = rewrite_links(vault, old_stem, target.stem, ledger, now)
    return Renamed(memory.id, rel, new_rel, updated)


def rewrite_links(vault: Path, old: str, new: str, ledger: WriteLedger, now: float) -> int:
    """``[[old...]]`` -> ``[[new...]]`` in every note; returns how many notes changed."""
    pattern = re.compile(r"\[\[" + re.escape(old) + r"(?=[\]|#^])", re.IGNORECASE)
    by_path = {e.path: (mid, e) for mid, e in ledger.entries.items()}
    changed = 0
    for path in iter_markdown_files(vault):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "[[" not in text or pattern.search(text) is None:
            continue
        new_text = pattern.sub(lambda _: f"[[{new}", text)
        owner = by_path.get(relative_posix(vault, path))
        atomic_write_text(path, new_text)
        changed += 1
        if owner is not None:
            memory_id, entry = owner
            before = body_checksum(parse_note_text(text).body)
            if before == entry.body_checksum:  # untouched by a person: still untouched
                after = body_checksum(parse_note_text(new_text).body)
                ledger.set(memory_id, LedgerEntry(entry.path, after, now, entry.conflict_checksum))
    return changed


__all__ = ["Renamed", "retitle_note", "rewrite_links"]
