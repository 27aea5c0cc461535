"""Entity notes: one per entity under ``<folder>/entities``, listing the notes that mention it.

The list sits between two markers on lines of their own; text outside them is the person's.
A sink collects the links of many promotions (``EntityNoteBatch.add``) and writes each entity
note once per flush: promoting 10,000 memories that name PostgreSQL rewrites PostgreSQL's note
a few times, not 10,000 times (each rewrite fsyncs a file that grows with the list).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cortexgraph.vault_sync.atomic_file import atomic_write_text
from cortexgraph.vault_sync.errors import UnsafePathError
from cortexgraph.vault_sync.note_format import markdown_text, note_text
from cortexgraph.vault_sync.note_names import EntityStems, entity_folder, note_file_name
from cortexgraph.vault_sync.paths import ensure_inside

log = logging.getLogger(__name__)

BLOCK_START = "<!-- cortexgraph:mentions -->"
BLOCK_END = "<!-- /cortexgraph:mentions -->"

# activation.entities.normalise_entity's rule (vault_sync does not import activation):
# punctuation outside a word goes, so "Acme Corp." and "acme corp" are one entity, while "c++",
# "c#" and "next.js" keep theirs (graph_query matches a name this way).
_LOOSE_PUNCT = re.compile(r"(?<![\w+#])[^\w\s+#]+|[^\w\s+#]+(?![\w])")
_POSSESSIVE = re.compile(r"(?:'s|\u2019s|')$")


def entity_name(text: str) -> str:
    """One spelling per entity: "Acme Corp.", "ACME corp" -> "acme corp" (case and
    punctuation outside words dropped); empty when nothing is left."""
    name = _POSSESSIVE.sub("", " ".join(text.strip().split()))
    return " ".join(_LOOSE_PUNCT.sub(" ", name).split()).lower()


class EntityNoteBatch:
    """Links waiting to be written: entity note path -> (entity, note stems in order)."""

    def __init__(
        self, vault: Path, folder: Path, version: str, stems: EntityStems | None = None
    ) -> None:
        self.vault = vault
        self.folder = folder
        self.version = version
        self.stems = stems or EntityStems(vault, folder)  # the sink's: its links say the same
        self._pending: dict[Path, tuple[str, dict[str, None]]] = {}
        self._paths: dict[str, Path | None] = {}  # entity -> checked path (None: unsafe)
        self.notes = 0  # notes added since the last write

    def add(self, entities: Iterable[str], note_stem: str) -> None:
        entities = list(entities)
        if not entities:
            return
        self.notes += 1
        for entity in entities:
            if entity not in self._paths:  # resolving a path costs more than the rest
                try:
                    name = note_file_name(self.stems.stem(entity))
                    self._paths[entity] = ensure_inside(
                        self.vault, entity_folder(self.folder) / name
                    )
                except UnsafePathError as exc:
                    log.warning("cortexgraph: entity note skipped: %s", exc)
                    self._paths[entity] = None
            path = self._paths[entity]
            if path is not None:
                self._pending.setdefault(path, (entity, {}))[1][note_stem] = None

    def write(
        self, *, durable: bool = True, written: Callable[[Path, str], None] | None = None
    ) -> None:
        """Write every pending entity note once (caller holds the sink's lock); ``written``
        hears each path and text written (the note locator records them)."""
        if not self._pending:
            self.notes = 0
            return
        try:  # a symlink out of the vault (folder or note) is skipped, never followed
            directory = ensure_inside(self.vault, entity_folder(self.folder))
            directory.mkdir(parents=True, exist_ok=True)
        except UnsafePathError as exc:
            log.warning("cortexgraph: entity notes skipped: %s", exc)
            self._pending.clear()
            self.notes = 0
            return
        while self._pending:
            path, (entity, stems) = next(iter(self._pending.items()))
            text = update_entity_note(path, entity, list(stems), self.version, durable=durable)
            if text is not None and written is not None:
                written(path, text)
            del self._pending[path]  # only once written: an OSError keeps it for the next try
        self.notes = 0


def update_entity_note(
    path: Path, entity: str, note_stems: Sequence[str], version: str, *, durable: bool = True
) -> str | None:
    """Add ``[[stem]]`` for each stem to the entity note's managed list (once each); the
    text written, or None when the note was left as it was."""
    wanted = [f"- [[{stem}]]" for stem in note_stems]
    if not path.exists():
        meta = {"title": entity, "cortexgraph": {"version": version, "entity": entity}}
        heading = markdown_text(entity)
        block = "\n".join(dict.fromkeys(wanted))
        body = f"# {heading}\n\nMentioned in:\n\n{BLOCK_START}\n{block}\n{BLOCK_END}\n"
        text = note_text(meta, body)
        atomic_write_text(path, text, durable=durable)
        return text
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:  # re-saved in another encoding: rewriting would garble it
        log.warning("cortexgraph: entity note %s is not UTF-8 text; its list is left as is", path)
        return None
    # markers on lines of their own: an entity named like one (title, heading) is not one
    start = _marker_at(text, BLOCK_START, 0)
    end = _marker_at(text, BLOCK_END, start) if start >= 0 else -1
    if start < 0 or end < start:  # the person removed our markers: append a fresh block
        block = "\n".join(dict.fromkeys(wanted))
        fresh = text.rstrip("\n") + f"\n\n{BLOCK_START}\n{block}\n{BLOCK_END}\n"
        atomic_write_text(path, fresh, durable=durable)
        return fresh
    lines = [x for x in text[start + len(BLOCK_START) : end].strip("\n").splitlines() if x.strip()]
    have = set(lines)
    added = [line for line in dict.fromkeys(wanted) if line not in have]
    if not added:
        return None
    new_block = BLOCK_START + "\n" + "\n".join([*lines, *added]) + "\n"
    updated = text[:start] + new_block + text[end:]
    atomic_write_text(path, updated, durable=durable)
    return updated


_MENTION = re.compile(r"^- \[\[([^\[\]|#/]+)\]\]$")


def drop_mentions(path: Path, dead: Callable[[str], bool], *, durable: bool = True) -> int:
    """Take out of the entity note's managed list each ``- [[stem]]`` line for which
    ``dead(stem)`` holds (a note unpromoted, or gone since); returns how many went. Text
    outside the markers, and lines in them that are not one of our links, stay."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return 0
    start = _marker_at(text, BLOCK_START, 0)
    end = _marker_at(text, BLOCK_END, start) if start >= 0 else -1
    if start < 0 or end < start:
        return 0
    lines = text[start + len(BLOCK_START) : end].strip("\n").splitlines()
    kept = [x for x in lines if not ((m := _MENTION.match(x.strip())) and dead(m.group(1)))]
    if len(kept) == len(lines):
        return 0
    block = BLOCK_START + "\n" + "".join(f"{x}\n" for x in kept)
    atomic_write_text(path, text[:start] + block + text[end:], durable=durable)
    return len(lines) - len(kept)


def prune_entity_notes(
    vault: Path, folder: Path, dead: Callable[[str], bool], *, durable: bool = True
) -> int:
    """drop_mentions over every entity note under ``<folder>/entities``; links removed."""
    try:
        directory = ensure_inside(vault, entity_folder(folder))
        notes = sorted(p for p in directory.glob("*.md") if p.is_file() and not p.is_symlink())
    except (UnsafePathError, OSError):
        return 0
    return sum(drop_mentions(p, dead, durable=durable) for p in notes)


_GENERATED_LINE = re.compile(r"^(?:#\s.*|Mentioned in:)$")


def untouched_entity_note(frontmatter: Mapping[str, Any], body: str) -> bool:
    """An entity note holding only what ``update_entity_note`` writes (its heading, "Mentioned
    in:" and the managed list of links): nothing a person wrote on it."""
    meta = frontmatter.get("cortexgraph")
    if not isinstance(meta, Mapping) or not meta.get("entity"):
        return False
    start = _marker_at(body, BLOCK_START, 0)
    end = _marker_at(body, BLOCK_END, start) if start >= 0 else -1
    if start < 0 or end < start:
        return False  # the person took our markers out: the page is theirs now
    outside = body[:start] + body[end + len(BLOCK_END) :]
    lines = (x.strip() for x in outside.splitlines())
    return all(not x or _GENERATED_LINE.match(x) for x in lines)


def _marker_at(text: str, marker: str, after: int) -> int:
    found = re.search(rf"^{re.escape(marker)}[ \t]*$", text[after:], re.MULTILINE)
    return after + found.start() if found else -1


__all__ = [
    "BLOCK_END",
    "BLOCK_START",
    "EntityNoteBatch",
    "drop_mentions",
    "entity_name",
    "prune_entity_notes",
    "untouched_entity_note",
    "update_entity_note",
]
