"""The one way cortexgraph writes into a vault: notes, entity notes, conflict copies, the write
ledger and its journal, the LTM index, a note moved to the trash.

A reader (Obsidian, a sync client, another cortexgraph process) sees a file whole, the old one
or the new one, never half of one: a rewrite goes through a hidden temp file in the same folder
and ``os.replace``; a journal line is appended whole or not at all. The store's own rewrite
(``storage.file_ops.atomic_write``) always fsyncs the file and its folder and raises
StorageError; a vault batch syncs once per flush instead (:func:`sync_filesystem`), and callers
here turn an OSError into their own VaultWriteError.

What this process wrote without an fsync is remembered by path until the flush that syncs it:
a flush after a few notes (an hourly run's) fsyncs just those files and their folders (the
files all at once from threads, then the folders: fsyncs in flight share a journal commit),
instead
of asking the kernel to write out every dirty page of the file system (``syncfs``), which waits
for whatever else is writing to that disk: 0.2-0.35 s of a 10k run's promote step while other
processes wrote, against ~5 ms quiet. A flush of many notes (a full run) still syncs the file
system once: one journal commit instead of thousands of fsyncs.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from cortexgraph.storage.file_cursor import append_whole

# Up to this many files left unsynced in this process, a flush fsyncs each (and their folders);
# more, and it syncs the whole file system once.
FSYNC_EACH_UP_TO = 64
SYNC_THREADS = 16  # fsyncs in flight at once at a flush (sync_filesystem)

_unsynced: set[Path] = set()  # written here without fsync, not yet synced by a flush
_unsynced_lock = threading.Lock()


def _written_unsynced(path: Path) -> None:
    with _unsynced_lock:
        _unsynced.add(Path(os.path.abspath(path)))


def atomic_write_text(path: Path, text: str, *, durable: bool = True) -> None:
    """Write ``text`` to ``path`` via a hidden temp file in the same folder and os.replace;
    the folder is made if it is missing. ``durable=False`` skips the fsync: for a batch that
    calls :func:`sync_filesystem` once at its flush instead."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with _open_in_folder(tmp, "w") as fh:
            fh.write(text)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
        if not durable:
            _written_unsynced(path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # never leave a half-written temp file behind
        raise


def append_line(path: Path, line: str) -> os.stat_result:
    """Append ``line`` (ending in a newline) whole or not at all, not fsynced; the file's stat
    after it. Opened per line: another process may empty the file between two appends."""
    data = line.encode("utf-8")
    _written_unsynced(path)
    try:
        return append_whole(path, data, fsync=False)
    except FileNotFoundError:  # the folder, made on the first line only
        path.parent.mkdir(parents=True, exist_ok=True)
        return append_whole(path, data, fsync=False)


def empty_file(path: Path) -> None:
    """Cut ``path`` to nothing (a journal folded into its snapshot)."""
    with open(path, "wb"):
        pass
    _written_unsynced(path)


def move_file(source: Path, target: Path) -> None:
    """Move ``source`` to ``target`` in one step (same file system: a rename, never a copy)."""
    os.replace(source, target)


def _open_in_folder(path: Path, mode: str) -> IO[Any]:
    """``open(path, mode)``, making its folder first if it is missing (not a mkdir per write)."""
    encoding, newline = (None, None) if "b" in mode else ("utf-8", "\n")
    try:
        return open(path, mode, encoding=encoding, newline=newline)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path, mode, encoding=encoding, newline=newline)


def sync_filesystem(path: Path) -> None:
    """Make what this process wrote without an fsync durable, at ``path``'s flush: each file,
    its folder and that folder's parent (a folder made for it) when they are few
    (``FSYNC_EACH_UP_TO``), else ``path``'s whole file system at once."""
    with _unsynced_lock:
        files = sorted(_unsynced)
        _unsynced.clear()
    if len(files) > FSYNC_EACH_UP_TO:
        _sync_whole_filesystem(path)
        return
    folders = {file.parent for file in files}
    # The files first, then their folders (the renames into them, and a folder made on the
    # way), as before; within each group at once, from threads: the file system commits
    # fsyncs in flight together (ext4 joins them into one journal commit), so 19 fsyncs
    # cost about one. One after another they were 60-85 ms of a 10k run's promote step
    # while other processes wrote, ~15 ms at once.
    _fsync_all(files)
    _fsync_all(sorted(folders | {folder.parent for folder in folders}))


def _fsync_all(paths: list[Path]) -> None:
    """fsync every path, all in flight at once (at most ``SYNC_THREADS``); returns when all
    are done, raising the first OSError."""
    if len(paths) < 2:
        for p in paths:
            _fsync_path(p)
        return
    with ThreadPoolExecutor(max_workers=min(len(paths), SYNC_THREADS)) as pool:
        for _ in pool.map(_fsync_path, paths):
            pass


def _fsync_path(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:  # replaced or moved since: its folder's fsync covers that
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_whole_filesystem(path: Path) -> None:
    """Flush every file written to ``path``'s file system to disk: ``syncfs`` where Linux has
    it (one journal commit for a whole batch of notes), else ``os.sync``."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(path, os.O_RDONLY)
        try:
            if libc.syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    except (OSError, AttributeError):
        pass
    os.sync()


__all__ = ["append_line", "atomic_write_text", "empty_file", "move_file", "sync_filesystem"]
