"""A later run's rewrite of a note the sink found: its Context section and its Related list.

``refresh_note_body`` takes a note already found (and retitled) by ``ObsidianNoteSink``'s
``refresh_note`` and brings its body up to date: a Context section that shows the previous
memory's text is taken out (vault_sync.leaked_context), and the managed Related list gets the
links of now. A person's text is never touched, nor a note without our markers. It is apart
from vault_sync.note_sink because it works on one note's text and the ledger alone; the sink
keeps finding, locking and writing notes anew. (vault_sync.refresh picks the notes a run
refreshes and calls the sink for each.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from cortexgraph.storage.models import Memory
from cortexgraph.vault_sync.atomic_file import atomic_write_text
from cortexgraph.vault_sync.leaked_context import without_leaked_context
from cortexgraph.vault_sync.ledger import WriteLedger
from cortexgraph.vault_sync.note_format import (
    LinkTarget,
    ParsedNote,
    body_checksum,
    note_text,
    parse_note_file,
    related_block,
    replace_related_block,
)
from cortexgraph.vault_sync.paths import relative_posix


def refresh_note_body(
    vault: Path,
    path: Path,
    parsed: ParsedNote | None,
    memory: Memory,
    links: list[LinkTarget],
    ledger: WriteLedger,
    now: float,
    *,
    renamed: bool,
    leaked_context: str | None,
    write_anew: Callable[[str], object],
) -> str | None:
    """Bring the note at ``path`` (``parsed``, if it was read where it is now) up to date;
    ``renamed``: it was just given its short title. ``write_anew(reason)`` writes the whole
    note again, for a note of ours that has no Related list yet. Returns what changed
    ("renamed", "context", "related", joined by "+"), or None."""
    changed = ["renamed"] if renamed else []
    if parsed is None or changed:
        parsed = parse_note_file(path)  # another encoding: broken, the person's to fix
    if parsed.frontmatter_error is not None:
        return "+".join(changed) or None
    entry = ledger.get(memory.id)
    untouched = entry is not None and body_checksum(parsed.body) == entry.body_checksum
    if leaked_context:
        cleaned = without_leaked_context(parsed.body, leaked_context, memory.meta.context)
        if cleaned is not None:
            atomic_write_text(path, note_text(parsed.metadata, cleaned))
            if untouched and entry is not None:  # still ours: the ledger says so
                rel = relative_posix(vault, path)
                fresh = body_checksum(cleaned)
                ledger.set(
                    memory.id,
                    replace(entry, path=rel, body_checksum=fresh, written_at=now),
                )
            parsed = replace(parsed, body=cleaned)
            changed.append("context")
    body = replace_related_block(parsed.body, related_block(links))
    if body is None and links and untouched:  # no list yet: write the note anew
        write_anew(str(parsed.metadata.get("promotion_reason") or ""))
        return "+".join([*changed, "related"])
    if body is None:  # a person's note without our markers: theirs alone
        return "+".join(changed) or None
    if body != parsed.body:
        atomic_write_text(path, note_text(parsed.metadata, body))
        changed.append("related")
    return "+".join(changed) or None


__all__ = ["refresh_note_body"]
