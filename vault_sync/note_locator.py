"""Find a memory's note by the ``id`` in its frontmatter without reading the vault every time.

One walk of the vault builds an id -> path map; after that a lookup is a dict hit plus a check
that the cached file still carries the id. The vault is walked again (incrementally: only files
whose mtime or size changed are re-read) when a cached path fails that check (the person moved,
renamed or edited the note) or when a miss finds the map older than ``max_age`` seconds (a
long-lived sink, e.g. the MCP server's, then sees notes added behind its back).

The map outlives the process: ``<vault>/.cortexgraph/note-ids.json`` holds each note's
vault-relative path, its stat key and the id it carried, and each folder's key (mtime, inode)
as it was before the walk listed it. A new process's first lookup *catches up* from it: it
stats the folders only; a folder whose key is unchanged (and was not changed within RACY_NS of
the walk that kept it: a change in the same clock tick leaves the key as it was) keeps its
notes as the map has them; any other is listed, and only its new names (or names at another
inode: every writer of ours replaces a file) are stat'ed and read. A note added, moved, renamed
or deleted changes its folder's key, so it is seen. What a catch-up cannot see is a note edited
in place in an unchanged folder: a lookup whose id the map had but the catch-up no longer
finds, a found path that no longer carries its id, and a miss where a note is known to exist,
each walk the vault in full (every folder listed, every note stat'ed), as every first lookup
did before. At 100k memories (15k notes in three folders) the first promotion stats 3
folders and lists the one our last run wrote into, instead of stat'ing 15k notes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortexgraph.vault_sync.atomic_file import atomic_write_text
from cortexgraph.vault_sync.ledger import STATE_DIR
from cortexgraph.vault_sync.note_format import ParsedNote, parse_note_text
from cortexgraph.vault_sync.paths import SKIPPED_DIRS

MAP_FILE = "note-ids.json"
MAP_VERSION = 2  # 2: with the folders' keys (a version 1 map is read, then walked in full)
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


StatKey = list[
    int
]  # [mtime_ns, size, inode], as the map file holds it: a replace changes the inode
DirKey = list[int]  # [mtime_ns, inode]: adding, removing or renaming a name in a folder changes it
Seen = list[
    Any
]  # [StatKey | None, id | None]: a note's key when it was read, and the id it carried
RACY_NS = 2_000_000_000  # a folder changed this close to a walk may change again unseen


def _stat_key(path: str) -> StatKey | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def _dir_key(path: str) -> DirKey | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_ino]


class NoteLocator:
    """The map is held as the file holds it, vault-relative POSIX paths to plain lists, so a
    process that changes a few entries neither builds nor writes back 15k ``Path`` objects."""

    def __init__(self, vault: Path, *, max_age: float = 60.0, save_walks: bool = True) -> None:
        self.vault = vault
        self.max_age = max_age
        # False: a walk leaves the map for ``save()`` (a batch sink's flush), so a run that
        # catches up and then writes notes writes the map once, not twice (250 KB at 10k).
        self.save_walks = save_walks
        self.walks = 0  # full directory walks so far (tests and benchmarks read it)
        self.catch_ups = 0  # walks that listed only the folders changed since the map
        self.reads = 0  # notes read to learn their id (the persisted map spares the rest)
        self.stats = 0  # notes stat'ed (a catch-up stats only names it has not seen)
        self._root = os.fspath(vault)
        self._by_id: dict[str, str] = {}
        self._seen: dict[str, Seen] = {}
        self._dirs: dict[str, DirKey] = {}  # every folder walked ("" the vault), before its listing
        self._walked_ns = 0  # wall clock at the start of the walk the folder keys come from
        # ids a note carried at the last walk and no longer at the last catch-up: a person
        # moved, renamed or edited that note where the catch-up does not look (a full walk does)
        self._gone: set[str] = set()
        self._built_at: float | None = None
        self._map_file = vault / STATE_DIR / MAP_FILE
        self._unsaved = False  # the map holds what the file does not

    def find(self, memory_id: str, *, expected: bool = False) -> Path | None:
        """The note carrying ``memory_id``, verified on disk; walks the vault only when needed.
        ``expected``: the caller knows the note existed, so a miss is worth a full walk.

        The first find in a process starts from the kept map and lists only the folders whose
        key changed since (a note added, removed, moved or renamed changes its folder's), so a
        consolidation run's first promotion stats the folders, not every note; a found path is
        read to check its id, and a stale one costs a full walk, as before."""
        if self._built_at is None:
            self._catch_up()
        assert self._built_at is not None
        path = self._verified(memory_id)
        known = memory_id in self._by_id or memory_id in self._gone
        if path is not None or not (known or expected):
            if path is not None or time.monotonic() - self._built_at < self.max_age:
                return path
            self._catch_up()  # notes added behind a long-lived sink's back are new names
            path = self._verified(memory_id)
            if path is not None or not (memory_id in self._by_id or memory_id in self._gone):
                return path
        self.rescan()
        return self._verified(memory_id)

    def _verified(self, memory_id: str) -> Path | None:
        rel = self._by_id.get(memory_id)
        if rel is None:
            return None
        path = self.vault / rel
        return path if note_id(path) == memory_id else None

    def record(self, memory_id: str, path: Path) -> None:
        """We just wrote ``path`` carrying ``memory_id`` (under the write lock)."""
        try:
            rel = path.relative_to(self.vault).as_posix()
        except ValueError:  # not under the vault as the locator names it: found by a walk
            return
        self._by_id[memory_id] = rel
        self._seen[rel] = [_stat_key(os.fspath(path)), memory_id]
        self._unsaved = self._built_at is not None  # a map never walked is not saved

    def record_text(self, path: Path, text: str) -> None:
        """We just wrote ``text`` to ``path``, a note that is no memory's (an entity note, under
        the write lock): the next process's catch-up takes it as known instead of reading it
        (173 entity notes read, 15-20 ms, in the run after a 10k store's first consolidation).
        A text with an ``id:`` (a person put one there) is left for the walk to read."""
        try:
            rel = path.relative_to(self.vault).as_posix()
        except ValueError:
            return
        head = text.encode("utf-8")[:HEAD_BYTES]
        if _FM_START.match(head) and _HAS_ID.search(head):
            return
        self._seen[rel] = [_stat_key(os.fspath(path)), None]
        self._unsaved |= self._built_at is not None  # a map never walked is not saved

    def rescan(self) -> None:
        """Walk the whole vault: every folder listed, every note stat'ed, the changed read."""
        if self._built_at is None:
            self._seen, _ = self._load_map()
        self.walks += 1
        self._walk(full=True)

    def _catch_up(self) -> None:
        """Walk from the kept map: a folder whose key is the one the map holds, and which had
        not changed for RACY_NS before that walk, is taken as it was (its notes and
        subfolders); any other is listed, and a name it did not have (or another inode at an
        old name: a replaced file) is stat'ed and read if need be. A map without folder keys
        (version 1, unreadable) costs a full walk."""
        if self._built_at is None:
            self._seen, dirs = self._load_map()
            if dirs is None:
                self.walks += 1
                self._walk(full=True)
                return
            self._dirs = dirs
        self.catch_ups += 1
        self._walk(full=False)

    def _walk(self, *, full: bool) -> None:
        old_seen, old_dirs, trusted_before = self._seen, self._dirs, self._walked_ns - RACY_NS
        notes_in: dict[str, list[str]] = {}
        subdirs_in: dict[str, list[str]] = {}
        if not full:
            for rel in old_seen:
                notes_in.setdefault(rel.rpartition("/")[0], []).append(rel)
            for rel in old_dirs:
                if rel:
                    subdirs_in.setdefault(rel.rpartition("/")[0], []).append(rel)
        seen: dict[str, Seen] = {}
        dirs: dict[str, DirKey] = {}
        reads, walked_ns, listed = self.reads, time.time_ns(), False
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            directory = os.path.join(self._root, rel_dir) if rel_dir else self._root
            key = _dir_key(directory)  # before the listing: a later change shows next time
            if key is None:
                continue
            dirs[rel_dir] = key
            if not full and old_dirs.get(rel_dir) == key and key[0] < trusted_before:
                for rel in notes_in.get(rel_dir, ()):
                    seen[rel] = old_seen[rel]
                stack.extend(sorted(subdirs_in.get(rel_dir, ())))
                continue
            listed = True
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError:  # kept under a key no folder has: listed again next time
                dirs[rel_dir] = [-1, -1]
                continue
            for entry in entries:
                if entry.name.startswith(".") or entry.name in SKIPPED_DIRS:
                    continue
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                if entry.is_dir(follow_symlinks=False):
                    stack.append(rel)
                elif entry.name.lower().endswith(".md") and entry.is_file():
                    old = old_seen.get(rel)
                    if not full and old is not None and old[0] and old[0][2] == entry.inode():
                        seen[rel] = old  # the same file: each writer of ours replaces one
                        continue
                    self.stats += 1
                    stat_key = _stat_key(entry.path)
                    if old is not None and old[0] == stat_key and stat_key is not None:
                        seen[rel] = old
                    else:
                        seen[rel] = [stat_key, self._read_id(Path(entry.path))]
        by_id: dict[str, str] = {}
        for rel, (_, found) in seen.items():
            if found is not None:
                by_id.setdefault(found, rel)  # two notes with one id: the first in walk order
        # a folder listed again is saved with this walk's clock, so the next one can trust it
        self._unsaved |= self.reads != reads or listed or seen.keys() != old_seen.keys()
        if not full:
            self._gone |= {old[1] for old in old_seen.values() if old[1]} - by_id.keys()
        else:
            self._gone = set()
        self._seen, self._dirs, self._by_id = seen, dirs, by_id
        self._walked_ns = walked_ns
        self._built_at = time.monotonic()
        if self.save_walks:
            self.save()

    def _load_map(self) -> tuple[dict[str, Seen], dict[str, DirKey] | None]:
        """The last walk's map (any process's) and its folder keys (None: a version 1 map or
        none): a map that cannot be read costs one full walk, never a wrong answer."""
        try:
            data = json.loads(self._map_file.read_text(encoding="utf-8"))
            version, notes = data.get("version"), data["notes"]
            if version not in (1, MAP_VERSION) or not isinstance(notes, dict):
                return {}, None
            # Each is checked where it is used; shapes here, unrolled (a generator per entry
            # was a third of reading a 2k-note map).
            for key, found in notes.values():
                if len(key) != 3 or not (
                    type(key[0]) is int and type(key[1]) is int and type(key[2]) is int
                ):
                    return {}, None
                if found is not None and type(found) is not str:
                    return {}, None
            if version != MAP_VERSION:
                return notes, None
            self._walked_ns = int(data["walked_ns"])
            dirs = data["dirs"]
            if not isinstance(dirs, dict) or not all(
                len(k) == 2 and all(type(x) is int for x in k) for k in dirs.values()
            ):
                return notes, None
            return notes, dirs
        except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
            return {}, None

    def save(self) -> None:
        """Leave the map for the next process, if it learnt anything (the sink's close)."""
        if not self._unsaved:
            return
        self._unsaved = False
        notes = {rel: seen for rel, seen in self._seen.items() if seen[0] is not None}
        data = {
            "version": MAP_VERSION,
            "walked_ns": self._walked_ns,
            "dirs": self._dirs,
            "notes": notes,
        }
        text = json.dumps(data, separators=(",", ":"))
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
