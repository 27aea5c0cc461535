"""File chores of the JSONL store: atomic rewrites, quarantine entries, stale temp files, and
the note a compaction leaves so other processes can follow it without re-reading everything.

Every function here is called with the store's inter-process lock held (``storage.jsonl_store``).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cortexgraph.storage.errors import StorageError
from cortexgraph.storage.file_cursor import FileCursor, file_stat
from cortexgraph.storage.jsonl_lines import count_lines, record_lines
from cortexgraph.storage.models import Memory, Relation
from cortexgraph.storage.protocol import CompactionReport

log = logging.getLogger(__name__)

COMPACTION_NOTE = ".cortexgraph.compacted"
_GEN_WIDTH = 20


def read_generation(path: Path) -> int:
    """The rewrite counter in ``path`` (0 if absent or unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return 0
    try:
        raw = os.pread(fd, _GEN_WIDTH, 0)
    finally:
        os.close(fd)
    try:
        return int(raw.strip() or 0)
    except ValueError:
        return 0


def bump_generation(path: Path) -> int:
    """Caller holds the lock. Written in place (fixed width) so its identity never changes."""
    gen = read_generation(path) + 1
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, str(gen).rjust(_GEN_WIDTH).encode(), 0)
    finally:
        os.close(fd)
    return gen


def atomic_write(path: Path, chunks: Sequence[bytes]) -> None:
    """Replace ``path`` with ``chunks`` (fsync, rename, fsync the directory)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as f:
            f.writelines(chunks)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StorageError(f"cannot rewrite {path}: {exc}") from exc


def remove_stale_temp_files(directory: Path, data_files: Sequence[str]) -> int:
    """Delete what killed rewrites left behind; returns how many files went.

    The data files' temp copies are written only under the lock the caller holds, so any one
    found now is dead. Snapshot and embedding-cache temp files are written without that lock:
    only those whose writing process is gone are removed."""
    removed = 0
    for name in data_files:
        for tmp in directory.glob(f".{name}.*.tmp"):
            removed += _unlink(tmp)
    snapshots = directory.glob(".cortexgraph-*.pickle.*.tmp")  # memories' and relations'
    writers = [(t, t.name.split(".")[-2]) for t in snapshots]
    writers += [(t, t.name.split(".")[-3]) for t in directory.glob(".embeddings-*.tmp.npz")]
    for tmp, pid in writers:
        if pid.isdigit() and not _alive(int(pid)):
            removed += _unlink(tmp)
    if removed:
        log.info("cortexgraph: removed %d stale temp file(s) in %s", removed, directory)
    return removed


def _unlink(path: Path) -> int:
    try:
        path.unlink()
    except OSError:
        return 0
    return 1


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


# -- the compaction note ---------------------------------------------------------------------
# A compaction rewrites the files with the live records of their first ``before`` bytes. A
# process that had read exactly those bytes already holds exactly those records: it moves its
# cursors to the new files instead of reloading the whole store (which made every writer ~12x
# slower while a compaction loop ran).


def write_compaction_note(
    directory: Path, generation: int, files: dict[str, tuple[int, int, int, int]], rules: str
) -> None:
    """``files``: name -> (inode before, bytes before, inode after, bytes after)."""
    note = {"generation": generation, "files": files, "rules": rules}
    try:
        (directory / COMPACTION_NOTE).write_text(json.dumps(note))
    except OSError as exc:  # only an optimisation: others then reload in full
        log.info("cortexgraph: could not write the compaction note: %s", exc)


def rewrite_compacted(
    directory: Path,
    cursors: tuple[FileCursor, FileCursor],
    records: tuple[Sequence[Memory], Sequence[Relation]],
    *,
    generation: int,
    rules: str,
) -> tuple[CompactionReport, bytes]:
    """Rewrite the memories and relations files with one line per live record (fsync, atomic
    replace), point their cursors at the new files, and leave the note of the compaction that
    makes ``generation``. Caller holds the lock, has caught up, and bumps the generation after.
    Returns the report and the memories file's new bytes (what a snapshot is taken of)."""
    before = {c.path.name: (c.inode, c.offset) for c in cursors}
    lines_before = sum(count_lines(c.path) for c in cursors)
    bytes_before = sum(file_stat(c)[1] for c in cursors)
    lines = [record_lines(r) for r in records]
    for c, chunk in zip(cursors, lines, strict=True):
        atomic_write(c.path, chunk)
        c.inode, c.offset = file_stat(c)
    after = {c.path.name: (*before[c.path.name], c.inode, c.offset) for c in cursors}
    write_compaction_note(directory, generation, after, rules)
    report = CompactionReport(
        memories_kept=len(lines[0]),
        relations_kept=len(lines[1]),
        lines_before=lines_before,
        lines_after=len(lines[0]) + len(lines[1]),
        bytes_before=bytes_before,
        bytes_after=sum(file_stat(c)[1] for c in cursors),
    )
    return report, b"".join(lines[0])


def read_compaction_note(directory: Path, generation: int, rules: str) -> dict[str, Any] | None:
    """The note of the compaction that made ``generation``, if it is that one and readable."""
    try:
        note = json.loads((directory / COMPACTION_NOTE).read_text())
    except (OSError, ValueError):
        return None
    if (
        not isinstance(note, dict)
        or note.get("generation") != generation
        or note.get("rules") != rules
        or not isinstance(note.get("files"), dict)
    ):
        return None
    return note


def followed_cursors(
    note: dict[str, Any], views: dict[str, tuple[tuple[int, int], tuple[int, int]]]
) -> dict[str, tuple[int, int]] | None:
    """Where each file's cursor moves after the noted compaction, or None (reload in full).

    ``views``: file name -> ((inode, offset) read so far, (inode, size) on disk now). Only a
    view at exactly the compacted bytes, with the compacted file still in place, follows."""
    moves = {}
    for name, (cursor, on_disk) in views.items():
        entry = note["files"].get(name)
        if (
            not isinstance(entry, list)
            or len(entry) != 4
            or not all(type(x) is int for x in entry)
            or (entry[0], entry[1]) != cursor
            or on_disk[0] != entry[2]
            or on_disk[1] < entry[3]
        ):
            return None
        moves[name] = (entry[2], entry[3])
    return moves


__all__ = [
    "COMPACTION_NOTE",
    "atomic_write",
    "bump_generation",
    "followed_cursors",
    "read_compaction_note",
    "read_generation",
    "remove_stale_temp_files",
    "rewrite_compacted",
    "write_compaction_note",
]
