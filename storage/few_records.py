"""A few records of a JSONL store, read and changed without loading the store.

A short process that touches a handful of memories (the PostToolUse hook reinforces the ones
Claude opened and links them) need not build and index every record, as opening a
``JSONLStore`` does: 0.16 CPU s more per call on a 10k store, 0.4 s on a 100k one, and a
snapshot rewrite of tens of MB whenever the snapshot is stale. ``FewRecords`` holds the
store's lock (the same file lock every ``JSONLStore`` writer takes), finds the newest line of
each id it is asked about by searching the file's bytes from the end (many ids: in one pass
over the file, ``_newest_lines``), builds only those records with the store's own rules, and
appends changed records in the store's line format, so every open store picks them up as it
picks up any other process's appends.

It answers as the store does (lines read by ``parse_record`` with the store's line check,
tombstones, relations of one second in save order), with two differences: a record whose
newest line parses but breaks the store's rules is absent here (the store would fall back to
its previous line and quarantine that one when it next opens); and a line counts as its id's
only where it spells ``"id": "<id>"`` (the store's writers all do; a hand-written line that
escapes a letter of either is passed over). A missing store is empty; nothing is created.
"""

from __future__ import annotations

import json
import mmap
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from filelock import FileLock

from cortexgraph.storage.config import LOCK_NAME, StoreConfig
from cortexgraph.storage.errors import MemoryNotFoundError, StorageError
from cortexgraph.storage.file_cursor import append_whole
from cortexgraph.storage.jsonl_lines import BAD_LINE_ERRORS, LineCheck, parse_record
from cortexgraph.storage.models import Memory, Relation
from cortexgraph.storage.validation import (
    check_loaded_line,
    checked_memory,
    checked_relation,
    loaded_memory,
    loaded_relation,
)

_Data = bytes | mmap.mmap  # a file's bytes, mapped: searching for a few ids reads a few pages
_R = TypeVar("_R")
# Whole files the searches by id may read before one regex pass finds the ids left: what that
# pass costs, as a search from the end (``rfind``, which skips by the needle's length) reads
# about 6 files in the time the regex engine reads one (0.009 s against 0.055 s, 54 MB).
_SEARCHES = 6
# A record's own id, as JSON spells it in a line (any of its blanks, a line has no newline).
_ID_KEY = rb'"id"[ \t\r]*:[ \t\r]*'


class FewRecords:
    """``with FewRecords(path, config) as store:``: the lock is held for the block, so what is
    read is current and what is appended comes after every other writer's lines. Offers the
    part of the store's API a short writer needs: ``find_many``, ``modify_many``,
    ``relations(memory_id, relation_type)``, ``put_relation``."""

    def __init__(self, path: str | Path, config: StoreConfig | None = None) -> None:
        self.path = Path(path).expanduser()
        self.config = config or StoreConfig()
        self._lock: FileLock | None = None
        self._files: dict[str, _Data] = {}

    def __enter__(self) -> FewRecords:
        if self.path.is_dir():
            self._lock = FileLock(str(self.path / LOCK_NAME))
            self._lock.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for name in list(self._files):
            self._forget(name)
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # -- reading -------------------------------------------------------------------------------
    def find_many(self, memory_ids: Iterable[str]) -> list[Memory]:
        """The live memories of ``memory_ids``, in their order (missing ones left out)."""
        newest = _newest_lines(self._file(self.config.memories_filename), memory_ids, self._check)
        found = (_built(loaded_memory, line.obj, self.config) for line in newest.values())
        return [m for m in found if m is not None]

    def relations(self, memory_id: str, relation_type: str | None = None) -> list[Relation]:
        """The live relations touching ``memory_id``, oldest first, the relations of one
        ``created_at`` in the order they were first saved (as ``store.relations``)."""
        data = self._file(self.config.relations_filename)
        after: dict[str, int] = {}  # relation id -> its newest line naming the memory
        for (start, stop), obj in _records_mentioning(data, memory_id, self._check):
            rid = obj["id"]
            named = memory_id in (obj.get("from_memory_id"), obj.get("to_memory_id"))
            if named and rid not in after and _names_itself(data, start, stop, rid):
                after[rid] = start
        found = []
        for line in _newest_lines(data, after, self._check, after=after).values():
            relation = _built(loaded_relation, line.obj, self.config)
            if (
                relation is not None
                and memory_id in (relation.from_memory_id, relation.to_memory_id)
                and (relation_type is None or relation.relation_type == relation_type)
            ):
                found.append(relation)
        # Ties of created_at go by save order, whose place needs a relation's older lines too:
        # looked for only when there are ties (a whole file per relation, or one pass).
        seconds = Counter(r.created_at for r in found)
        tied = [r.id for r in found if seconds[r.created_at] > 1]
        places = _newest_lines(data, tied, self._check, saved_at=True) if tied else {}
        return sorted(found, key=lambda r: (r.created_at, _place(places.get(r.id))))

    # -- writing -------------------------------------------------------------------------------
    def modify_many(
        self, memory_ids: Iterable[str], change: Callable[[Memory], Memory | None]
    ) -> list[Memory]:
        """``store.modify_many``: ``change`` each stored memory of ``memory_ids`` (unknown ids
        are skipped) and append the changed ones in one write; returns the records written."""
        changed = [n for m in self.find_many(memory_ids) if (n := change(m)) is not None and n != m]
        pairs = [checked_memory(m, self.config) for m in changed]
        self._append(self.config.memories_filename, [line for _, line in pairs])
        return [m for m, _ in pairs]

    def put_relation(self, relation: Relation) -> Relation:
        """``store.put_relation``: validated, both ends must be live memories."""
        checked, line = checked_relation(relation, self.config)
        ends = (checked.from_memory_id, checked.to_memory_id)
        live = {m.id for m in self.find_many(ends)}
        for end in ends:
            if end not in live:
                raise MemoryNotFoundError(f"no memory with id {end!r}")
        self._append(self.config.relations_filename, [line])
        return checked

    # -- the files -------------------------------------------------------------------------------
    def _check(self, raw: bytes, obj: Any) -> None:
        check_loaded_line(raw, obj, self.config)  # the store's rules on a whole line

    def _file(self, name: str) -> _Data:
        if self._lock is None:
            return b""  # no store here (or not inside ``with``): nothing to read
        if name not in self._files:
            data: _Data = b""
            try:
                with open(self.path / name, "rb") as f:
                    if f.seek(0, 2):
                        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except FileNotFoundError:
                pass
            self._files[name] = data
        return self._files[name]

    def _forget(self, name: str) -> None:
        data = self._files.pop(name, None)
        if isinstance(data, mmap.mmap):
            data.close()

    def _append(self, name: str, lines: list[str]) -> None:
        if not lines:
            return
        if self._lock is None:
            raise StorageError(f"no store at {self.path}: nothing was written")
        payload = ("\n".join(lines) + "\n").encode("utf-8")
        try:
            append_whole(self.path / name, payload, fsync=self.config.fsync, fresh_line=True)
        except OSError as exc:
            raise StorageError(f"cannot write {self.path / name}: {exc}") from exc
        self._forget(name)  # mapped again when next read: it now ends with these lines


def _place(line: _Newest | None) -> int:
    return 0 if line is None else line.saved_at


def _built(build: Callable[[Any, StoreConfig], _R], obj: Any, config: StoreConfig) -> _R | None:
    try:
        return build(obj, config)
    except BAD_LINE_ERRORS:  # the store's rules refuse it: absent (module docstring)
        return None


@dataclass(frozen=True, slots=True)
class _Newest:
    obj: dict[str, Any]  # the newest line's record
    saved_at: int  # where its first line since its last tombstone starts: its save order


def _newest_lines(
    data: _Data,
    record_ids: Iterable[str],
    check: LineCheck,
    *,
    saved_at: bool = False,
    after: Mapping[str, int] | None = None,
) -> dict[str, _Newest]:
    """The newest line of each live id of ``record_ids``, in their order (the store's rule: the
    last line of an id wins, a tombstone deletes, a line the store cannot read is passed over).
    ``saved_at`` also places each where the store orders it (which reads its older lines).
    ``after``: where a line of an id that names it by its ``"id"`` key starts (its newest
    line is that one or a later one).

    A search from the end for one id (``rfind``) is quickest for a few ids, and an id changed
    lately is found near the end; but it reads the file back to the id's newest line, a whole
    file for an old one: per relation of a relation-rich memory, that was most of its cost.
    So ids are searched for one by one only while those searches read less than one regex
    pass costs (``_SEARCHES`` times the bytes it reads); the ids left are found in that one
    pass, from the first place where one of their lines may be. Where what the searches will
    read is known (``after``; to the start for ``saved_at``), all ids go one way."""
    ids = [(rid, _spelled(rid)) for rid in dict.fromkeys(record_ids)]
    known = {} if saved_at or after is None else after  # (unknown: from the start)
    if not data or not ids:
        return {}
    budget = _SEARCHES * (len(data) - min(known.get(rid, 0) for rid, _ in ids))
    reads_known = saved_at or after is not None
    if reads_known and sum(len(data) - known.get(rid, 0) for rid, _ in ids) > budget:
        budget = 0
    walks: dict[str, tuple[_Newest | None, int]] = {}
    for rid, needle in ids:
        if budget <= 0:
            break
        walks[rid] = walk = _walk(data, rid, _lines_holding(data, needle, rid), check, saved_at)
        budget -= len(data) - walk[1]
    rest = {needle: rid for rid, needle in ids if rid not in walks}
    if rest:
        spans: dict[str, list[tuple[int, int]]] = {rid: [] for rid in rest.values()}
        ends = b"|".join(map(re.escape, rest))
        begin = min(known.get(rid, 0) for rid in rest.values())
        for hit in re.compile(_ID_KEY + b"(" + ends + b")").finditer(data, begin):
            lines = spans[rest[hit.group(1)]]
            if not lines or lines[-1][1] < hit.start():  # (a line may name it twice)
                lines.append(_line_at(data, hit.start()))
        for rid, lines in spans.items():
            walks[rid] = _walk(data, rid, reversed(lines), check, saved_at)
    found = ((rid, walks[rid][0]) for rid, _ in ids)
    return {rid: newest for rid, newest in found if newest is not None}


def _walk(
    data: _Data, rid: str, lines: Iterable[tuple[int, int]], check: LineCheck, saved_at: bool
) -> tuple[_Newest | None, int]:
    """The newest record of ``rid`` among ``lines`` (its candidate lines, last first), and
    where the walk stopped (0: it read back to the file's start)."""
    newest: dict[str, Any] | None = None
    first = 0
    for start, stop in lines:
        try:
            obj = parse_record(data[start:stop], check)
        except BAD_LINE_ERRORS:  # the store quarantines it; an older line may still count
            continue
        if obj["id"] != rid:
            continue  # it names rid in another field
        if obj.get("_deleted") is True:
            return (None if newest is None else _Newest(newest, first)), start
        if newest is None:
            newest = obj
        first = start
        if not saved_at:
            return _Newest(newest, first), start
    return (None if newest is None else _Newest(newest, first)), 0


def _records_mentioning(
    data: _Data, text: str, check: LineCheck
) -> Iterator[tuple[tuple[int, int], dict[str, Any]]]:
    """Where each line holding ``"text"`` is and its record, last line first; lines the store
    cannot read are passed over (it quarantines them)."""
    for start, stop in _lines_holding(data, _spelled(text)):
        try:
            yield (start, stop), parse_record(data[start:stop], check)
        except BAD_LINE_ERRORS:
            continue


def _lines_holding(
    data: _Data, needle: bytes, record_id: str | None = None
) -> Iterator[tuple[int, int]]:
    """(start, end) of each line holding ``needle``, last first; with ``record_id``, only
    those that name it by their ``"id"`` key (the lines the regex pass finds for it)."""
    key = None if record_id is None else _id_key(record_id)
    end = len(data)
    while (hit := data.rfind(needle, 0, end)) >= 0:
        start, stop = _line_at(data, hit)
        end = start
        if key is None or key.search(data, start, stop):
            yield start, stop


def _id_key(record_id: str) -> re.Pattern[bytes]:
    """``"id": "<record_id>"`` (any blanks): how a record names itself in every line the
    store writes, and what the one-pass search looks for."""
    return re.compile(_ID_KEY + re.escape(_spelled(record_id)))


def _names_itself(data: _Data, start: int, stop: int, record_id: str) -> bool:
    """Whether the line from ``start`` to ``stop`` names ``record_id`` by its ``"id"`` key."""
    return _id_key(record_id).search(data, start, stop) is not None


def _line_at(data: _Data, pos: int) -> tuple[int, int]:
    stop = data.find(b"\n", pos)
    return data.rfind(b"\n", 0, pos) + 1, len(data) if stop < 0 else stop


def _spelled(text: str) -> bytes:
    """``text`` as a JSON string in the store's lines (``dumps_compact``: UTF-8, unescaped)."""
    return json.dumps(text, ensure_ascii=False).encode("utf-8")


__all__ = ["FewRecords"]
