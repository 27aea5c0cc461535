"""Where a store has read each JSONL file to, and reading or appending past that point.

A cursor is the file's inode and the offset read so far; ``storage.jsonl_store`` compares it
with a ``stat`` to notice another process's appends (and, with the generation counter, a
rewrite).
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cortexgraph.storage.errors import StorageError

log = logging.getLogger(__name__)


@dataclass(slots=True)
class FileCursor:
    path: Path
    inode: int = -1
    offset: int = 0


def file_stat(cursor: FileCursor) -> tuple[int, int]:
    """(inode, size) of the cursor's file now; (-1, 0) when it does not exist."""
    try:
        st = cursor.path.stat()
    except FileNotFoundError:
        return (-1, 0)
    return (st.st_ino, st.st_size)


def read_new_bytes(cursor: FileCursor) -> tuple[int, int, bytes]:
    """(inode, end offset, the bytes past the cursor); the whole file if it was replaced."""
    try:
        with cursor.path.open("rb") as f:
            ino = os.fstat(f.fileno()).st_ino
            f.seek(cursor.offset if ino == cursor.inode else 0)
            data = f.read()
    except FileNotFoundError:
        return (-1, 0, b"")
    except OSError as exc:
        raise StorageError(f"cannot read {cursor.path}: {exc}") from exc
    return ino, (cursor.offset if ino == cursor.inode else 0) + len(data), data


def read_from(path: Path, start_at: Callable[[io.RawIOBase, int], int]) -> tuple[int, int, bytes]:
    """(inode, start, the bytes of the file ``path`` from ``start`` to its end), ``start``
    being what ``start_at(file, size)`` says once the file is open (it may read the file:
    a snapshot's check of the prefix it covers); (-1, 0, b"") when there is no file."""
    try:
        with path.open("rb", buffering=0) as f:
            st = os.fstat(f.fileno())
            start = start_at(f, st.st_size)
            f.seek(start)
            return st.st_ino, start, f.readall()
    except FileNotFoundError:
        return (-1, 0, b"")
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc}") from exc


def append_whole(
    path: Path, payload: bytes, *, fsync: bool, fresh_line: bool = False
) -> os.stat_result:
    """Append ``payload`` whole or not at all; the file's stat after it. Caller holds the lock.

    A full disk is a short write, then ENOSPC: the bytes that landed would be read back as
    records (a batch the caller was told failed, half saved) and the cut line as corruption.
    So on any error the file is cut back to where it ended. Raw ``os.write`` calls: a buffered
    file would write its leftover bytes again when closed, after the cut. ``fresh_line``: a
    writer killed mid-line left no newline, so ours starts on a new line."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        end = os.lseek(fd, 0, os.SEEK_END)
        if fresh_line and end > 0 and os.pread(fd, 1, end - 1) != b"\n":
            payload = b"\n" + payload
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
        except OSError:
            _cut_back(fd, end, path)
            raise
        return os.fstat(fd)
    finally:
        os.close(fd)


def _cut_back(fd: int, end: int, path: Path) -> None:
    try:
        os.ftruncate(fd, end)
    except OSError as e:  # the reader then quarantines the cut line: still nothing lost
        log.warning("could not cut %s back to %d bytes after a failed append: %s", path, end, e)


def append_lines(cursor: FileCursor, lines: Sequence[str], *, fsync: bool) -> None:
    """Caller holds the lock and has caught up, so ``cursor.offset`` is the file's end."""
    if not lines:
        return
    payload = ("\n".join(lines) + "\n").encode("utf-8")
    try:
        st = append_whole(cursor.path, payload, fsync=fsync, fresh_line=True)
    except OSError as exc:
        raise StorageError(f"cannot write {cursor.path}: {exc}") from exc
    cursor.inode, cursor.offset = st.st_ino, st.st_size


def truncate_to(cursor: FileCursor, size: int) -> None:
    """Undo this process's last append (caller holds the lock): the file cut back to ``size``,
    the cursor with it."""
    try:
        os.truncate(cursor.path, size)
    except OSError as exc:
        raise StorageError(f"cannot undo the append to {cursor.path}: {exc}") from exc
    cursor.inode, cursor.offset = file_stat(cursor)


__all__ = [
    "FileCursor",
    "append_lines",
    "append_whole",
    "file_stat",
    "read_from",
    "read_new_bytes",
    "truncate_to",
]
