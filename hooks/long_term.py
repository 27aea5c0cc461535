"""Promoted memories in the hooks' own recall, shown with their vault note's words.

A promoted memory's note is long-term memory, and a person may have edited it in Obsidian
since: what the note says now is what recall shows, labelled "LTM note <path>". The hook reads
only the notes of the promoted memories it is about to show (a handful of small files), never
the vault's index: ranking stays on the JSONL record's words (bench/hook_ltm_recall.py measures
the cost). Notes a person wrote in the vault are found only through a running MCP server.

A memory's secrets are redacted before it touches disk (storage.secrets), but a note is edited
by hand: the words of every note recall shows are redacted here (``note_entry``), as a prompt the
hook quotes is, because the hook's output is a transcript others may read.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from cortexgraph.hooks.context_block import Entry
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.secrets import redact_secrets
from cortexgraph.vault_sync.note_body import body_of, reading_text

MAX_NOTE_BYTES = 256 * 1024  # a preview needs the start of a note; a huge one is cut
NO_NOTE = "LTM (note not found)"
# Redacting costs up to ~0.5 ms a KB on token-like text; a line shows at most 300 characters
# (PluginSettings.preview_chars), so only the start of a note's words is redacted and kept.
SHOWN_CHARS = 10_000


def recalled_entry(memory: Memory, label: str, vault: Path, *, redact: bool = True) -> Entry:
    """``memory`` as recall shows it: a promoted one with its note's current words."""
    path = memory.promoted_to if memory.status is MemoryStatus.PROMOTED else None
    words = note_words(vault, path) if path else None
    if path is None or words is None:
        return record_entry(memory, label)
    return note_entry(memory, label, path, words, redact=redact)


def note_entry(
    memory: Memory | None, label: str, path: str, words: str, *, redact: bool = True
) -> Entry:
    """A long-term note's line (with its promoted memory, if any), its secrets redacted unless
    the store keeps them (``StoreConfig.redact_secrets``)."""
    words = words[:SHOWN_CHARS]
    if redact:
        words = redact_secrets(words).text
    return Entry(memory, label, note_path=path, text=words or None)


def record_entry(memory: Memory, label: str) -> Entry:
    """``memory`` with its record's words; a promoted one whose note could not be read (deleted
    or moved in the vault) says so."""
    if memory.status is MemoryStatus.PROMOTED:
        label = " · ".join(x for x in (label, NO_NOTE) if x)
    return Entry(memory, label)


def note_words(vault: Path, rel: str) -> str | None:
    """The words of the note at vault-relative ``rel`` (None: missing, unreadable, outside
    the vault, or empty)."""
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        return None
    try:
        with open(vault.joinpath(*parts), "rb") as file:
            text = file.read(MAX_NOTE_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    return reading_text(body_of(text), title=PurePosixPath(rel).stem) or None


__all__ = ["NO_NOTE", "note_entry", "note_words", "recalled_entry", "record_entry"]
