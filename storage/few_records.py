"""A few records of a JSONL store, read and changed without loading the store.

A short process that touches a handful of memories (the PostToolUse hook reinforces the ones
Claude opened and links them) need not build and index every record, as opening a
``JSONLStore`` does: 0.16 CPU s more per call on a 10k store, 0.4 s on a 100k one, and a
snapshot rewrite of tens of MB whenever the snapshot is stale. ``FewRecords`` holds the
store's lock (the same file lock every ``JSONLStore`` writer takes), finds the newest line of
each id it is asked about by searching the file's bytes from the end, builds only those
records with the store's own rules, and appends changed records in the store's line format,
so every open store picks them up as it picks up any other process's appends.

It answers as the store does, with one difference: a record whose newest line parses but
breaks the store's rules is absent here (the store would fall back to its previous line and
quarantine that one when it next opens). A missing store is empty; nothing is created.
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from filelock import FileLock

from cortexgraph.storage.config import LOCK_NAME, StoreConfig
from cortexgraph.storage.errors import MemoryNotFoundError, StorageError
from cortexgraph.storage.file_cursor import append_whole
from cortexgraph.storage.jsonl_lines import BAD_LINE_ERRORS
from cortexgraph.storage.models import Memory, Relation
from cortexgraph.storage.validation import (
    checked_memory,
    checked_relation,
    loaded_memory,
    loaded_relation,
)

_Data = bytes | mmap.mmap  # a file's bytes, mapped: searching for a few ids reads a few pages


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
        found = (self._memory(mid) for mid in dict.fromkeys(memory_ids))
        return [m for m in found if m is not None]

    def relations(self, memory_id: str, relation_type: str | None = None) -> list[Relation]:
        """The live relations touching ``memory_id``, oldest first (as ``store.relations``)."""
        data = self._file(self.config.relations_filename)
        ids = {
            obj["id"]
            for obj in _objects_mentioning(data, memory_id)
            if memory_id in (obj.get("from_memory_id"), obj.get("to_memory_id"))
            and isinstance(obj.get("id"), str)
        }
        found = []
        for rid in ids:
            obj = _newest(data, rid)
            if obj is None:
                continue
            try:
                relation = loaded_relation(obj, self.config)
            except BAD_LINE_ERRORS:  # a line the store cannot build is no relation
                continue
            if memory_id in (relation.from_memory_id, relation.to_memory_id) and (
                relation_type is None or relation.relation_type == relation_type
            ):
                found.append(relation)
        return sorted(found, key=lambda r: r.created_at)

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
        for end in (checked.from_memory_id, checked.to_memory_id):
            if self._memory(end) is None:
                raise MemoryNotFoundError(f"no memory with id {end!r}")
        self._append(self.config.relations_filename, [line])
        return checked

    # -- the files -------------------------------------------------------------------------------
    def _memory(self, memory_id: str) -> Memory | None:
        obj = _newest(self._file(self.config.memories_filename), memory_id)
        if obj is None:
            return None
        try:
            return loaded_memory(obj, self.config)
        except BAD_LINE_ERRORS:  # the store's rules refuse it: absent (module docstring)
            return None

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


def _newest(data: _Data, record_id: str) -> dict[str, Any] | None:
    """The object of the last line whose id is ``record_id`` (None when there is none, or it
    is a tombstone): the store's rule, the last line of an id wins."""
    for obj in _objects_mentioning(data, record_id):
        if obj.get("id") == record_id:
            return None if obj.get("_deleted") else obj
    return None


def _objects_mentioning(data: _Data, text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of the lines holding ``"text"``, last line first; lines that do not
    parse are passed over (the store quarantines them)."""
    needle = json.dumps(text).encode("utf-8")
    end = len(data)
    while (hit := data.rfind(needle, 0, end)) >= 0:
        start = data.rfind(b"\n", 0, hit) + 1
        stop = data.find(b"\n", hit)
        if stop < 0:
            stop = len(data)
        end = start
        try:
            obj = json.loads(data[start:stop])
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


__all__ = ["FewRecords"]
