"""Lines a store cannot read, moved aside byte for byte with the reason.

``<name>.quarantine.jsonl`` beside each data file holds one entry per moved line
(``quarantine_entry``): the original bytes in ``line_base64``, the text in ``line`` when it is
valid UTF-8. The memory store moves them when it opens or catches up (``StoreQuarantine``), the
beads issue file when it rewrites (storage/beads/issue_file.py).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cortexgraph.storage.errors import StorageError
from cortexgraph.storage.file_cursor import FileCursor, append_whole, file_stat
from cortexgraph.storage.file_ops import atomic_write
from cortexgraph.storage.jsonl_lines import BadLine, quarantine_path

log = logging.getLogger(__name__)


def quarantine_entry(bad: BadLine, filename: str, now: int) -> dict[str, Any]:
    """A quarantine line: ``line_base64`` holds the original bytes exactly; ``line`` repeats
    them as text when they are valid UTF-8 (never a copy with replacement characters)."""
    entry: dict[str, Any] = {"quarantined_at": now, "file": filename, "reason": bad.reason}
    with contextlib.suppress(UnicodeDecodeError):
        entry["line"] = bad.raw.decode("utf-8")
    entry["line_base64"] = base64.b64encode(bad.raw).decode("ascii")
    return entry


def append_quarantine(qpath: Path, entries: Sequence[dict[str, Any]]) -> None:
    """Append ``entries`` to the quarantine file, fsynced, whole or not at all."""
    payload = "".join(json.dumps(e) + "\n" for e in entries)  # ASCII: any reason text is safe
    try:
        append_whole(qpath, payload.encode("ascii"), fsync=True)
    except OSError as exc:
        raise StorageError(f"cannot write quarantine file {qpath}: {exc}") from exc


def move_to_quarantine(path: Path, qpath: Path, bad: Sequence[BadLine]) -> Path:
    """Append ``bad`` lines to ``qpath`` (fsynced), then rewrite ``path`` without them. If the
    rewrite fails (a full disk), the entries are taken back out of ``qpath``: the lines are
    still in ``path``, and the next try must not record them twice."""
    now = int(time.time())
    try:
        qsize: int | None = qpath.stat().st_size
    except FileNotFoundError:
        qsize = None
    append_quarantine(qpath, [quarantine_entry(b, path.name, now) for b in bad])
    bad_lines = {b.raw for b in bad}
    kept = [
        line + b"\n"
        for line in path.read_bytes().split(b"\n")
        if line.strip() and line not in bad_lines
    ]
    try:
        atomic_write(path, kept)
    except StorageError:
        with contextlib.suppress(OSError):
            if qsize is None:
                qpath.unlink()
            else:
                os.truncate(qpath, qsize)
        raise
    return qpath


class StoreQuarantine:
    """Moves a store's unreadable lines aside, and remembers those a full disk kept in place.

    A store whose disk is full must still open (it would take every tool down with it): lines
    that cannot be moved are left in the file, out of the view, and moved by the next open or
    compaction. Caller holds the store's file lock around every call."""

    def __init__(self) -> None:
        self.pending: list[tuple[FileCursor, list[BadLine]]] = []

    def move(self, cursor: FileCursor, bad: list[BadLine]) -> bool:
        """Move ``bad`` out of the cursor's file (the cursor follows the rewrite); False when
        that could not be written: then they are pending."""
        try:
            qpath = move_to_quarantine(cursor.path, quarantine_path(cursor.path), bad)
        except StorageError as exc:
            self.pending.append((cursor, bad))
            log.warning(
                "cortexgraph: %d unreadable line(s) of %s are left out, but could not be moved "
                "aside (%s); the next open or compaction moves them",
                len(bad),
                cursor.path,
                exc,
            )
            return False
        cursor.inode, cursor.offset = file_stat(cursor)
        log.warning(
            "cortexgraph: moved %d unreadable line(s) from %s to %s (first: %s)",
            len(bad),
            cursor.path,
            qpath,
            bad[0].reason,
        )
        return True

    def move_pending(self) -> int:
        """Move every pending line now (before a compaction writes the files from a view that
        leaves them out, or they would be gone); how many moved. A StorageError leaves the rest
        pending."""
        moved = 0
        while self.pending:
            cursor, bad = self.pending[0]
            move_to_quarantine(cursor.path, quarantine_path(cursor.path), bad)
            self.pending.pop(0)
            cursor.inode, cursor.offset = file_stat(cursor)
            moved += len(bad)
        return moved


__all__ = ["StoreQuarantine", "append_quarantine", "move_to_quarantine", "quarantine_entry"]
