"""The LTM index: every markdown note of the vault, re-read only when its mtime or size changed.

Stored at ``<vault>/.cortexgraph/ltm-index.jsonl`` (one note a line), never inside the notes.
Messy vaults are expected: broken YAML, dates and nested maps in frontmatter, duplicate names in
different folders, attachments, ``.obsidian/`` and ``.trash/``, huge notes. Each file is indexed
or skipped with a reason; nothing is printed.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, NotRequired, TypedDict

from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import validate_id
from cortexgraph.storage.text_index import TextIndex
from cortexgraph.vault_sync.atomic_file import atomic_write_text
from cortexgraph.vault_sync.ledger import STATE_DIR
from cortexgraph.vault_sync.markdown_parse import first_heading, inline_tags, wikilinks
from cortexgraph.vault_sync.note_format import metadata_list, parse_note_text
from cortexgraph.vault_sync.note_names import note_file_name
from cortexgraph.vault_sync.paths import SKIPPED_DIRS

log = logging.getLogger(__name__)

INDEX_FILE = "ltm-index.jsonl"
INDEX_VERSION = 2  # 2: ids only when they can be a memory's; CRLF frontmatter read
MAX_NOTE_BYTES = 1_000_000  # larger notes are indexed from their first megabyte
_DIR_REASONS = {
    ".obsidian": "Obsidian settings folder",
    ".trash": "Obsidian trash",
    ".git": "git metadata",
}


@dataclass(frozen=True, slots=True)
class NoteRecord:
    path: str  # vault-relative, forward slashes
    title: str
    content: str  # body without frontmatter
    frontmatter: Mapping[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()  # frontmatter tags, then inline #tags (nested kept)
    wikilinks: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    memory_id: str | None = None  # frontmatter ``id`` of notes cortexgraph wrote
    mtime_ns: int = 0
    size: int = 0
    frontmatter_error: str | None = None
    truncated: bool = False

    @property
    def name(self) -> str:
        return PurePosixPath(self.path).stem

    @property
    def conflict_of(self) -> str | None:
        value = self.frontmatter.get("conflict_of")
        return str(value) if value is not None else None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["tags"], data["wikilinks"], data["aliases"] = (
            list(self.tags),
            list(self.wikilinks),
            list(self.aliases),
        )
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NoteRecord:
        d = dict(data)
        for key in ("tags", "wikilinks", "aliases"):
            d[key] = tuple(d.get(key) or ())
        return cls(**d)


@dataclass(frozen=True, slots=True)
class SkippedFile:
    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class IndexReport:
    notes: int  # notes in the index after the refresh
    reparsed: int  # read again because new or changed
    unchanged: int
    removed: int
    skipped: tuple[SkippedFile, ...]
    broken_frontmatter: int
    seconds: float


def parse_note_file(vault: Path, rel: str, stat: os.stat_result, max_bytes: int) -> NoteRecord:
    """One note as an index record; unreadable parts are reported in the record, not raised."""
    with open(vault / rel, "rb") as fh:
        raw = fh.read(max_bytes + 1)
    truncated = len(raw) > max_bytes
    text = raw[:max_bytes].decode("utf-8", errors="replace")
    parsed = parse_note_text(text)
    meta = parsed.metadata
    fm_tags = [t.lstrip("#") for t in metadata_list(meta, "tags") + metadata_list(meta, "tag")]
    tags = list(dict.fromkeys([t for t in fm_tags if t] + inline_tags(parsed.body)))
    title = meta.get("title")
    if not isinstance(title, str) or not title.strip():
        title = first_heading(parsed.body) or PurePosixPath(rel).stem
    return NoteRecord(
        path=rel,
        title=title.strip(),
        content=parsed.body,
        frontmatter=meta,
        tags=tuple(tags),
        wikilinks=tuple(wikilinks(parsed.body)),
        aliases=tuple(metadata_list(meta, "aliases", sep=",")),
        memory_id=_memory_id(meta.get("id")),
        mtime_ns=stat.st_mtime_ns,
        size=stat.st_size,
        frontmatter_error=parsed.frontmatter_error,
        truncated=truncated,
    )


def _memory_id(value: Any) -> str | None:
    """The frontmatter ``id`` if it can name a memory. Any other (a Zettelkasten "2024/01 a",
    a list) is the person's own: their note, not one to look up in the store, whose lookup
    refuses a malformed id (every search_unified call failed on such a note)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    try:
        return validate_id(str(value))
    except InvalidInputError:
        return None


class _Lookups(TypedDict):
    by_name: dict[str, NoteRecord]
    by_suffix: dict[str, NoteRecord]
    by_id: dict[str, NoteRecord]
    backlinks: NotRequired[dict[str, set[str]]]  # added last: it resolves links itself


class LTMIndex:
    """Notes of one vault by path, with name resolution, backlinks and a BM25 text index."""

    def __init__(self, vault: str | os.PathLike[str], *, max_note_bytes: int = MAX_NOTE_BYTES):
        self.vault = Path(vault).expanduser().resolve()
        self.file = self.vault / STATE_DIR / INDEX_FILE
        self.max_note_bytes = max_note_bytes
        self.notes: dict[str, NoteRecord] = {}
        self.skipped: dict[str, SkippedFile] = {}
        self._text: TextIndex | None = None
        self._derived: _Lookups | None = None
        # What searches derive from the notes (e.g. embedding matrices); emptied on every change.
        self.derived_cache: dict[Any, Any] = {}

    @classmethod
    def open(cls, vault: str | os.PathLike[str], *, refresh: bool = True) -> LTMIndex:
        """Load the stored index and (by default) bring it up to date with the vault."""
        index = cls(vault)
        index.load()
        if refresh:
            index.refresh()
        return index

    # -- persistence ----------------------------------------------------------------------------
    def load(self) -> None:
        """Read the stored index; a missing or damaged file just means a full rebuild next."""
        self.notes, self.skipped = {}, {}
        try:
            with open(self.file, encoding="utf-8") as fh:
                header = json.loads(fh.readline() or "{}")
                if header.get("version") != INDEX_VERSION:
                    return
                for line in fh:
                    data = json.loads(line)
                    if "skipped" in data:
                        s = SkippedFile(data["skipped"], data["reason"])
                        self.skipped[s.path] = s
                    else:
                        record = NoteRecord.from_json(data)
                        self.notes[record.path] = record
        except FileNotFoundError:
            pass
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.warning("rebuilding unreadable LTM index %s: %s", self.file, exc)
            self.notes, self.skipped = {}, {}
        self._invalidate()

    def save(self) -> None:
        lines = [json.dumps({"version": INDEX_VERSION, "notes": len(self.notes)})]
        lines += [json.dumps(r.to_json(), ensure_ascii=False) for r in self.notes.values()]
        lines += [
            json.dumps({"skipped": s.path, "reason": s.reason}) for s in self.skipped.values()
        ]
        atomic_write_text(self.file, "\n".join(lines) + "\n")

    # -- refresh --------------------------------------------------------------------------------
    def refresh(self, progress: Callable[[int, int], None] | None = None) -> IndexReport:
        """Re-read new and changed notes, drop deleted ones, save if anything changed."""
        start = time.perf_counter()
        found, skipped = self._scan()
        changed = [rel for rel, st in found.items() if self._stale(rel, st)]
        removed = [rel for rel in self.notes if rel not in found]
        for rel in removed:
            del self.notes[rel]
        for i, rel in enumerate(changed, 1):
            try:
                self.notes[rel] = parse_note_file(self.vault, rel, found[rel], self.max_note_bytes)
            except OSError as exc:
                skipped[rel] = SkippedFile(rel, f"unreadable: {exc.strerror or exc}")
                self.notes.pop(rel, None)
            if progress is not None:
                progress(i, len(changed))
        dirty = bool(changed or removed or skipped.keys() != self.skipped.keys())
        self.skipped = skipped
        if dirty:
            text = self._text
            self._invalidate()
            if text is not None:  # a built BM25 index is patched, not rebuilt
                for rel in [*removed, *changed]:
                    text.remove(rel)
                for rel in changed:
                    if rel in self.notes:
                        text.add(rel, _searchable(self.notes[rel]))
                self._text = text
            try:
                self.save()
            except OSError as exc:  # a cache of the notes: searching them must not fail on it
                log.warning("cannot save the LTM index %s (rebuilt next time): %s", self.file, exc)
        return IndexReport(
            notes=len(self.notes),
            reparsed=len(changed),
            unchanged=len(found) - len(changed),
            removed=len(removed),
            skipped=tuple(skipped.values()),
            broken_frontmatter=sum(r.frontmatter_error is not None for r in self.notes.values()),
            seconds=time.perf_counter() - start,
        )

    def rebuild(self, progress: Callable[[int, int], None] | None = None) -> IndexReport:
        self.notes, self.skipped = {}, {}
        self._invalidate()
        return self.refresh(progress)

    def _stale(self, rel: str, st: os.stat_result) -> bool:
        record = self.notes.get(rel)
        return record is None or record.mtime_ns != st.st_mtime_ns or record.size != st.st_size

    def _scan(self) -> tuple[dict[str, os.stat_result], dict[str, SkippedFile]]:
        found: dict[str, os.stat_result] = {}
        skipped: dict[str, SkippedFile] = {}
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            try:
                entries = list(os.scandir(self.vault / rel_dir))
            except OSError as exc:
                skipped[rel_dir + "/"] = SkippedFile(rel_dir + "/", f"unreadable: {exc.strerror}")
                continue
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                if entry.is_dir(follow_symlinks=False):
                    if entry.name == STATE_DIR and not rel_dir:
                        continue  # our own state, not part of the vault
                    if entry.name in SKIPPED_DIRS or entry.name.startswith("."):
                        reason = _DIR_REASONS.get(entry.name, "hidden folder")
                        skipped[rel + "/"] = SkippedFile(rel + "/", reason)
                    else:
                        stack.append(rel)
                elif entry.name.startswith("."):
                    continue  # our temp files, editors' swap files
                elif entry.is_symlink():
                    skipped[rel] = SkippedFile(rel, "symbolic link (may point outside the vault)")
                elif entry.name.lower().endswith(".md"):
                    found[rel] = entry.stat()
                else:
                    skipped[rel] = SkippedFile(rel, "attachment (not a markdown note)")
        return found, skipped

    # -- queries --------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.notes)

    def __iter__(self) -> Iterator[NoteRecord]:
        return iter(self.notes.values())

    def get(self, path: str) -> NoteRecord | None:
        return self.notes.get(path)

    def by_memory_id(self, memory_id: str) -> NoteRecord | None:
        return self._lookups()["by_id"].get(memory_id)

    def resolve_link(self, target: str) -> NoteRecord | None:
        """The note a ``[[target]]`` opens in Obsidian: an exact vault path, else the note with
        that name (case-insensitive), preferring the shortest path when names repeat."""
        t = target.strip().removesuffix(".md")
        exact = self.notes.get(note_file_name(t))
        if exact is not None:
            return exact
        lookups = self._lookups()
        if "/" in t:
            return lookups["by_suffix"].get(t.lower())
        return lookups["by_name"].get(t.lower())

    def backlinks(self, path: str) -> list[str]:
        return sorted(self._lookups()["backlinks"].get(path, ()))

    def broken_links(self) -> list[tuple[str, str]]:
        """(note path, link target) for links that open no existing note."""
        return [
            (record.path, link)
            for record in self.notes.values()
            for link in record.wikilinks
            if self.resolve_link(link) is None and not _looks_like_file(link)
        ]

    def text_index(self) -> TextIndex:
        """BM25 over title, aliases, tags and content (built on first use, after each change)."""
        if self._text is None:
            text = TextIndex()
            for r in self.notes.values():
                text.add(r.path, _searchable(r))
            self._text = text
        return self._text

    def _invalidate(self) -> None:
        self._text = None
        self._derived = None
        self.derived_cache.clear()

    def _lookups(self) -> _Lookups:
        if self._derived is None:
            by_name: dict[str, NoteRecord] = {}
            by_suffix: dict[str, NoteRecord] = {}
            by_id: dict[str, NoteRecord] = {}
            for r in sorted(self.notes.values(), key=lambda r: (r.path.count("/"), r.path)):
                by_name.setdefault(r.name.lower(), r)
                parts = r.path.removesuffix(".md").lower().split("/")
                for i in range(1, len(parts)):
                    by_suffix.setdefault("/".join(parts[i:]), r)
                by_suffix.setdefault("/".join(parts), r)
                if r.memory_id and r.conflict_of is None:
                    by_id.setdefault(r.memory_id, r)
            self._derived = {"by_name": by_name, "by_suffix": by_suffix, "by_id": by_id}
            backlinks: dict[str, set[str]] = {}
            for r in self.notes.values():
                for link in r.wikilinks:
                    target = self.resolve_link(link)
                    if target is not None and target.path != r.path:
                        backlinks.setdefault(target.path, set()).add(r.path)
            self._derived["backlinks"] = backlinks
        return self._derived


def _searchable(r: NoteRecord) -> str:
    return " ".join([r.title, *r.aliases, *r.tags, r.content])


def _looks_like_file(link: str) -> bool:
    """Links to attachments ('diagram.png', 'board.canvas') are not note links."""
    suffix = PurePosixPath(link).suffix.lower()
    return bool(suffix) and suffix != ".md" and suffix[1:].isalpha() and len(suffix) <= 6


__all__ = [
    "INDEX_FILE",
    "MAX_NOTE_BYTES",
    "IndexReport",
    "LTMIndex",
    "NoteRecord",
    "SkippedFile",
    "parse_note_file",
]
