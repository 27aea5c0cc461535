"""Find a memory's note by the ``id`` in its frontmatter without reading the vault every time.

One walk of the vault builds an id -> path map; after that a lookup is a dict hit plus a check
that the cached file still carries the id. The vault is walked again (incrementally: only files
whose mtime or size changed are re-read) when a cached path fails that check (the person moved,
renamed or edited the note) or when a miss finds the map older than ``max_age`` seconds (a
long-lived sink, e.g. the MCP server's, then sees notes added behind its back).

The map outlives the process: each walk that read a note leaves it in
``<vault>/.cortexgraph/note-ids.json`` (each note's vault-relative path, its stat key and the id
it carried), and the next process's first walk starts from it. A walk still lists every folder
and stats every note, so a note added, removed, moved or edited since (another stat key) is read
again; an unchanged one is not. A consolidation run's first promotion read every note of the
vault before (1.8k notes at 10k memories, 14.5k at 100k); now it stats them.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from cortexgraph.vault_sync.atomic_file import atomic_write_text
from cortexgraph.vault_sync.ledger import STATE_DIR
from cortexgraph.vault_sync.note_format import ParsedNote, parse_note_text
from cortexgraph.vault_sync.paths import iter_markdown_files

MAP_FILE = "note-ids.json"
MAP_VERSION = 1
HEAD_BYTES = 8192  # an id further down than this is not looked for (as before)
_HAS_ID = re.compile(rb"^[\"']?id[\"']?[ \t]*:", re.MULTILINE)
_FM_START = re.compile(rb"\A(?:\xef\xbb\xbf)?---[ \t]*\r?\n")


def read_head(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError:
        return None


@dataclass(frozen=True, slots=True)
class ReadNote:
    """A note as read once: its frontmatter ``id`` and, when the file is valid UTF-8, its
    parse, which a caller about to update the note uses instead of reading it again."""

    id: str | None
    parsed: ParsedNote | None  # None: bytes that are not UTF-8 (an update reads them strictly)


def read_note(path: Path) -> ReadNote | None:
    """The note at ``path`` read and parsed once; None if it cannot be read."""
    try:
        try:
            parsed, strict = parse_note_text(path.read_text(encoding="utf-8")), True
        except UnicodeDecodeError:  # the id is still found; the text is not fit to write back
            text = path.read_text(encoding="utf-8", errors="replace")
            parsed, strict = parse_note_text(text), False
    except OSError:
        return None
    value = parsed.metadata.get("id")
    return ReadNote(str(value) if value is not None else None, parsed if strict else None)


def note_id(path: Path) -> str | None:
    """The frontmatter ``id`` of the note at ``path`` (None: no note, no id, or broken YAML)."""
    read = read_note(path)
    return read.id if read is not None else None


StatKey = tuple[int, int, int]  # (mtime_ns, size, inode): an atomic replace changes the inode


def _stat_key(path: Path) -> StatKey | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class NoteLocator:
    def __init__(self, vault: Path, *, max_age: float = 60.0) -> None:
        self.vault = vault
        self.max_age = max_age
        self.walks = 0  # full directory walks so far (tests and benchmarks read it)
        self.reads = 0  # notes read to learn their id (the persisted map spares the rest)
        self._by_id: dict[str, Path] = {}
        self._seen: dict[Path, tuple[StatKey | None, str | None]] = {}
        self._built_at: float | None = None
        self._map_file = vault / STATE_DIR / MAP_FILE
        self._unsaved = False  # the map holds what the file does not

    def find(self, memory_id: str, *, expected: bool = False) -> Path | None:
        """The note carrying ``memory_id``, verified on disk; walks the vault only when needed.
        ``expected``: the caller knows the note existed, so a miss is worth a fresh walk."""
        if self._built_at is None:
            self.rescan()
        assert self._built_at is not None
        path = self._by_id.get(memory_id)
        if path is not None:
            if note_id(path) == memory_id:
                return path
        elif not expected and time.monotonic() - self._built_at < self.max_age:
            return None
        self.rescan()
        path = self._by_id.get(memory_id)
        return path if path is not None and note_id(path) == memory_id else None

    def record(self, memory_id: str, path: Path) -> None:
        """We just wrote ``path`` carrying ``memory_id`` (under the write lock)."""
        self._by_id[memory_id] = path
        self._seen[path] = (_stat_key(path), memory_id)
        self._unsaved = self._built_at is not None  # a map never walked is not saved

    def rescan(self) -> None:
        self.walks += 1
        if self._built_at is None:
            self._seen = self._load_map()
        seen: dict[Path, tuple[StatKey | None, str | None]] = {}
        by_id: dict[str, Path] = {}
        reads = self.reads
        for path in iter_markdown_files(self.vault):
            key = _stat_key(path)
            old = self._seen.get(path)
            found = old[1] if old is not None and old[0] == key and key is not None else None
            if old is None or old[0] != key or key is None:
                found = self._read_id(path)
            seen[path] = (key, found)
            if found is not None:
                by_id.setdefault(found, path)  # two notes with one id: the first in walk order
        self._unsaved |= self.reads != reads or len(seen) != len(self._seen)
        self._seen, self._by_id = seen, by_id
        self._built_at = time.monotonic()
        self.save()

    def _load_map(self) -> dict[Path, tuple[StatKey | None, str | None]]:
        """The last walk's map (any process's), or nothing: a map that cannot be read costs
        one full read of the vault, never a wrong answer (every entry is checked by stat)."""
        try:
            data = json.loads(self._map_file.read_text(encoding="utf-8"))
            if data.get("version") != MAP_VERSION:
                return {}
            return {
                self.vault / rel: ((int(k[0]), int(k[1]), int(k[2])), None if i is None else str(i))
                for rel, (k, i) in data["notes"].items()
            }
        except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
            return {}

    def save(self) -> None:
        """Leave the map for the next process, if it learnt anything (the sink's close)."""
        if not self._unsaved:
            return
        self._unsaved = False
        notes = {
            path.relative_to(self.vault).as_posix(): [list(key), found]
            for path, (key, found) in self._seen.items()
            if key is not None
        }
        text = json.dumps({"version": MAP_VERSION, "notes": notes}, separators=(",", ":"))
        # a batch sink syncs the vault at its flush; a lost map is only a slower walk
        with contextlib.suppress(OSError):
            atomic_write_text(self._map_file, text, durable=False)

    def _read_id(self, path: Path) -> str | None:
        self.reads += 1
        head = read_head(path)
        # Most of a person's notes have no ``id:`` key: skip them without parsing YAML.
        if not head or not _FM_START.match(head) or not _HAS_ID.search(head):
            return None
        return note_id(path)


__all__ = ["NoteLocator", "ReadNote", "note_id", "read_head", "read_note"]
