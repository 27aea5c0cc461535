"""Where a store has read each JSONL file to, and reading or appending past that point.

A cursor is the file's inode and the offset read so far; ``storage.jsonl_store`` compares it
with a ``stat`` to notice another process's appends (and, with the generation counter, a
rewrite).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cortexgraph.storage.errors import StorageError


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


def append_lines(cursor: FileCursor, lines: Sequence[str], *, fsync: bool) -> None:
    """Caller holds the lock and has caught up, so ``cursor.offset`` is the file's end."""
    if not lines:
        return
    payload = ("\n".join(lines) + "\n").encode("utf-8")
    try:
        with open(cursor.path, "a+b") as f:
            end = f.seek(0, os.SEEK_END)
            # A writer killed mid-line left no newline: start ours on a fresh line.
            if end > 0 and os.pread(f.fileno(), 1, end - 1) != b"\n":
                payload = b"\n" + payload
            f.write(payload)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
            cursor.inode, cursor.offset = os.fstat(f.fileno()).st_ino, f.tell()
    except OSError as exc:
        raise StorageError(f"cannot write {cursor.path}: {exc}") from exc


__all__ = ["FileCursor", "append_lines", "file_stat", "read_new_bytes"]
