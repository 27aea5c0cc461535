"""A store's load snapshots rewritten on request while it stays open, not by the next open.

An open rewrites a snapshot once more than ``StoreConfig.snapshot_refresh_bytes`` of lines were
appended past it (storage.jsonl_store): at 100k memories ~1.2 s of that open, usually the
hourly consolidation run's. The process that appended those lines, the MCP server, is idle
most of the time; ``refresh_snapshots`` lets it rewrite them itself once its writes settle
(mcp_server/snapshot_upkeep.py), so the next open reads a snapshot with a short tail.

What it must not do is write a snapshot that says more than the file: the state pickled is
the store's view, and the bytes it claims to cover are exactly those that view was read from.
So, under the store's lock, it catches up with the files under the file lock and, still under
it, opens each file it will cover: a rewrite (compaction, quarantine) replaces a file by a new
one (a new inode), so the descriptor keeps reading the bytes the view came from, whatever
happens to the path later. Then, still under the store's lock, it takes the view: the
memories (frozen records: the list is enough) and a copy of the text index (``TextIndex.copy``,
~10-30 ms at 100k memories where pickling it would be ~0.1 s), and the relations. A save
waits for those steps only; building the columns, pickling and writing happen after the lock
is released, as they do after an open's (``_write_snapshot_if_due``). Several processes may
write the same snapshot: each writes a temporary file and renames it, so a reader sees one
whole snapshot or the other, each true to the bytes it names.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from filelock import FileLock

from cortexgraph.storage.deferred_text import DeferredText, crc_hex
from cortexgraph.storage.file_cursor import FileCursor
from cortexgraph.storage.index_snapshot import (
    SNAPSHOT_NAME,
    crc_of,
    snapshot_size,
    snapshot_state,
    write_snapshot_of,
)
from cortexgraph.storage.indexed_store import IndexedStore
from cortexgraph.storage.indexes import text_index_of
from cortexgraph.storage.jsonl_lines import gc_paused
from cortexgraph.storage.quarantine import StoreQuarantine
from cortexgraph.storage.relation_snapshot import RELATIONS_SNAPSHOT_NAME, relations_state

log = logging.getLogger(__name__)


class SnapshotRefresh(IndexedStore):
    """``refresh_snapshots`` over the files and the reading that ``JSONLStore`` holds."""

    # JSONLStore's state and reading, declared so this part type-checks on its own.
    path: Path
    _mem: FileCursor
    _rel: FileCursor
    _flock: FileLock
    _rules: str
    _unreadable: StoreQuarantine

    def _catch_up(self) -> None:
        raise NotImplementedError

    def snapshot_tails(self) -> dict[str, int]:
        """Bytes of each file past what its snapshot on disk covers, by snapshot name, from a
        ``stat`` and the snapshot's header (its check values are not read); 0 for a file too
        small to be given a snapshot (``StoreConfig.snapshot_min_bytes``)."""
        return {name: self._tail(cursor.path, name) for cursor, name in self._snapshotted()}

    @property
    def search_index_loaded(self) -> bool:
        """False while the text index of the snapshot this store opened from is unread (the
        first search reads it: storage.deferred_text)."""
        return type(self._text) is not DeferredText

    def load_search_index(self) -> bool:
        """Read the snapshot's text index now rather than at the first search; True if it was
        unread. For a long-lived process that opens the store and then waits for searches
        (the MCP server, in its opening thread): at 100k memories the read is 0.1-0.17 s
        that the first search would otherwise wait for. Saves wait for it meanwhile."""
        with self._lock:
            if self.search_index_loaded:
                return False
            self.text_index  # noqa: B018  (reads it; changes kept since the open are replayed)
            return True

    def refresh_snapshots(self, min_tail_bytes: int) -> list[str]:
        """Write a fresh snapshot of each file (memories, relations) with more than
        ``min_tail_bytes`` of lines past what its snapshot on disk covers, so the next open
        applies none of them; the names of the snapshots written. Nothing while lines that
        could not be read stay in a file (``StoreQuarantine``: the view lacks them)."""
        behind = [
            (cursor, name)
            for cursor, name in self._snapshotted()
            if self._tail(cursor.path, name) > min_tail_bytes
        ]
        if not behind:
            return []
        with ExitStack() as files:
            with self._lock:
                opened = self._open_caught_up(behind, files)
                with gc_paused():
                    views = [self._view(name) for name, _, _, _ in opened]
            return [
                name
                for (name, path, fd, size), view in zip(opened, views, strict=True)
                if self._write_fresh(name, path, fd, size, view, min_tail_bytes)
            ]

    def _open_caught_up(
        self, behind: list[tuple[FileCursor, str]], files: ExitStack
    ) -> list[tuple[str, Path, int, int]]:
        """Caller holds the store's lock: caught up under the file lock, (snapshot name, file,
        a descriptor of it, the bytes the view holds) of each file in ``behind``."""
        with self._flock:
            self._catch_up()
            if self._unreadable.pending:
                return []
            return [
                (name, cursor.path, fd, cursor.offset)
                for cursor, name in behind
                if cursor.offset >= self.config.snapshot_min_bytes
                and (fd := _open_as_read(cursor, files)) is not None
            ]

    def _write_fresh(
        self, name: str, path: Path, fd: int, size: int, view: tuple[Any, ...], min_tail: int
    ) -> bool:
        """The snapshot ``name`` of ``view``, the first ``size`` bytes of ``fd``'s file, unless
        another process refreshed it or rewrote the file meanwhile."""
        if size - snapshot_size(self.path, self._rules, name) <= min_tail:
            return False
        if not _still_at_path(fd, path):  # a snapshot of the old file's bytes would not match
            return False
        try:
            covered = _prefix_digest(fd, size)
        except OSError as exc:  # a cache: the next open writes it
            log.info("cortexgraph: snapshot %s not refreshed: %s", name, exc)
            return False
        with gc_paused():
            state = _state(name, view)
            return write_snapshot_of(self.path, size, covered, state, self._rules, name)

    def _snapshotted(self) -> Iterator[tuple[FileCursor, str]]:
        yield self._mem, SNAPSHOT_NAME
        yield self._rel, RELATIONS_SNAPSHOT_NAME

    def _tail(self, path: Path, name: str) -> int:
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return 0
        if size < self.config.snapshot_min_bytes:
            return 0
        return max(0, size - snapshot_size(self.path, self._rules, name))

    def _view(self, name: str) -> tuple[Any, ...]:
        """Caller holds the store's lock: what the snapshot ``name`` is to hold, as it is now
        (records are frozen; the text index is the one thing a save changes in place)."""
        if name == SNAPSHOT_NAME:
            memories, text = list(self._memories.values()), self._text
            if type(text) is DeferredText:  # not read yet: not unpickled under the lock
                parts = text.parts()  # (unchanged: its bytes as they are)
                copied = (list(parts[0]), parts[1]) if parts is not None else text.copy()
                if copied is not None:
                    return memories, copied
            return memories, self.text_index.copy()
        return (list(self._relations.values()),)


def _open_as_read(cursor: FileCursor, files: ExitStack) -> int | None:
    """Caller holds the file lock and has caught up: a descriptor of the file the view was
    read from (None: no such file, or another one than the cursor's)."""
    try:
        fd = os.open(cursor.path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    files.callback(os.close, fd)
    return fd if os.fstat(fd).st_ino == cursor.inode else None


def _still_at_path(fd: int, path: Path) -> bool:
    """The descriptor's file is still the one at ``path``, not replaced by a rewrite."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _prefix_digest(fd: int, size: int) -> str:
    """``index_snapshot.digest`` of the file's first ``size`` bytes, read a block at a time (it
    only grows past them while the descriptor is open: appends land after, and a rewrite is
    another file)."""
    with os.fdopen(fd, "rb", buffering=0, closefd=False) as f:  # the refresh's own descriptor
        crc = crc_of(f, 0, size)
    if crc is None:
        raise OSError(f"file ended before {size} bytes")
    return crc_hex(crc)


def _state(name: str, view: tuple[Any, ...]) -> Any:
    if name == SNAPSHOT_NAME:
        memories, text = view
        if isinstance(text, DeferredText):  # a copy: loaded here, after the lock
            text = text.index() or text_index_of({m.id: m for m in memories})
        return snapshot_state(memories, text)
    return relations_state(view[0])


__all__ = ["SnapshotRefresh"]
