"""Packing the loose objects our commits write, so ``.git`` does not grow by a whole file a run.

Every commit of ours stores the whole issue file as a new loose (zlib) object: 0.46 MB at 10k
memories, 3.8 MB at 100k, a few GB a year of hourly runs. We commit through GitPython's object
database, so ``git gc --auto`` (which ``git commit`` runs) never runs; successive versions of
the file differ in a few dozen lines and git's delta packing stores each in a few KB.

So each commit adds the on-disk size of the loose objects it wrote (one ``stat`` each) to a
counter kept beside the tracker's lock in ``.git/``; past ``threshold`` the committer, still
holding the lock, runs ``git repack -d -l -q --geometric=2 --no-write-bitmap-index`` through
GitPython (git refuses an incremental repack that is to write a bitmap, as a person's
``repack.writeBitmaps`` asks). That packs the loose objects (reachable or not: nothing is
deleted, no prune, reflogs untouched) and merges small packs so their number stays logarithmic,
never rewriting a person's big pack. Older git (before 2.32) gets a plain ``repack -d -l -q``,
and past ``_PACK_LIMIT`` packs ``repack -A -d -l -q`` (unreachable objects of old packs come
back loose, as ``git gc`` leaves them). ``git repack`` is safe for concurrent readers; gitdb
caches its pack list, so ``refresh`` re-reads it (a process that had the repository open when
another one packed calls it before a commit; a walk of the history it overtook, after the walk:
commit_log.own_commits). A failure to pack is a warning, and the next try comes after another
``threshold`` of writes (not at every commit: a repository git refuses would fail each one).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cortexgraph.storage.beads.errors import PackError

if TYPE_CHECKING:
    from git import Repo

log = logging.getLogger(__name__)

# 32 MB of loose objects: at 10k memories (0.46 MB a run) a pack every ~70 hourly runs, at 100k
# (3.8 MB) every ~8; .git then holds at most 32 MB of loose objects beside packs a few MB big,
# where unpacked it grows 11-90 MB a day. Packing them holds the lock 1-4 s, once in many runs
# (bench/beads_growth_bench.py); a smaller threshold packs more often to save a few MB of disk.
PACK_THRESHOLD = 32 * 1024 * 1024
_PACK_LIMIT = 20  # older git, no --geometric: packs beyond this are merged into one


@dataclass(frozen=True, slots=True)
class PackReport:
    """What packing did: ``.git``'s bytes before and after, and how long it took."""

    bytes_before: int
    bytes_after: int
    seconds: float


def loose_bytes(repo: Repo, binshas: Iterable[bytes]) -> int:
    """The on-disk size of these objects' loose files (0 for any that are not loose)."""
    root = Path(repo.odb.root_path())  # GitDB: .git/objects
    total = 0
    for binsha in binshas:
        hexsha = binsha.hex()
        with contextlib.suppress(OSError):
            total += os.stat(root / hexsha[:2] / hexsha[2:]).st_size
    return total


def read_counter(path: Path) -> int:
    try:
        return max(0, int(path.read_text(encoding="ascii").strip() or 0))
    except (OSError, ValueError):
        return 0


def _write_counter(path: Path, value: int) -> None:
    """Fixed width, written in place: truncating a file on ext4 flushes it at close (0.8 ms
    where this takes 0.015)."""
    with contextlib.suppress(OSError):  # .git/ not writable: the commit failed already
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, b"%020d\n" % value)  # at offset 0, over the same 21 bytes
        finally:
            os.close(fd)


def note_written(
    repo: Repo, counter: Path, binshas: Iterable[bytes], threshold: int | None
) -> bool:
    """Count the loose objects a commit wrote; pack when the count passes ``threshold`` (None:
    never). True if packed. Never raises: the commit it follows stands whatever happens here."""
    total = read_counter(counter) + loose_bytes(repo, binshas)
    if threshold is None or total < threshold:
        _write_counter(counter, total)
        return False
    started = time.perf_counter()
    try:
        pack(repo)
    except PackError as e:
        # Tried again after another ``threshold`` of writes, not at every commit: a repository
        # git refuses (say, another owner's) would start a doomed git and warn on each one. The
        # loose objects stay; the next pack that works takes them all.
        log.warning(
            "could not pack %d bytes of loose git objects (tried again after %d MB more): %s",
            total,
            threshold // (1024 * 1024),
            e,
        )
        _write_counter(counter, 0)
        return False
    _write_counter(counter, 0)
    log.info("packed %d bytes of loose git objects in %.2f s", total, time.perf_counter() - started)
    return True


def pack(repo: Repo) -> None:
    """Pack the repository's loose objects and merge small packs; PackError if git fails."""
    import git

    # No bitmap: git refuses an incremental repack where ``repack.writeBitmaps`` (or
    # ``pack.writeBitmaps``) asks for one, and a pack that failed so would fail every commit.
    incremental = ("-d", "-l", "-q", "--no-write-bitmap-index")
    try:
        try:
            repo.git.repack(*incremental, "--geometric=2")
        except git.GitCommandError as e:
            if "geometric" not in str(e.stderr):
                raise
            repo.git.repack(*incremental)  # git before 2.32
            if _pack_count(repo) > _PACK_LIMIT:
                repo.git.repack("-A", "-d", "-l", "-q")
    except (git.GitError, OSError, ValueError) as e:
        raise PackError(f"git repack failed in {repo.git_dir}: {_short(e)}") from e
    finally:
        refresh(repo)  # even a failed repack may have removed loose objects it had packed


def refresh(repo: Repo, *, force: bool = False) -> None:
    """Make ``repo`` see packs written (and loose objects removed) since it last looked: gitdb
    keeps its pack list until told (one ``stat`` of the pack folder when nothing changed;
    ``force``: listed again even so, for a look taken while a pack was being written).

    The packs a repack merged and deleted are unmapped: gitdb's map manager keeps a region
    mapped until 8 GB of them are (and a pack's index holds its own in a reference cycle), so a
    process that keeps its tracker (the MCP server) kept every deleted pack's disk space."""
    # gitdb asserts its list; a map still viewed (BufferError) is left mapped, not an error
    with contextlib.suppress(OSError, ValueError, AssertionError, BufferError):
        before = _pack_entities(repo)
        if repo.odb.update_cache(force):
            gone = before - _pack_entities(repo)
            if gone:
                from gitdb.util import mman

                for entity in gone:
                    entity.close()  # drops its cursors: the regions are the manager's alone
                mman.collect()  # unmaps every region nobody uses


def _pack_entities(repo: Repo) -> set[Any]:
    """gitdb's open packs (PackEntity) of ``repo``'s object database."""
    from gitdb.db.pack import PackedDB

    dbs = repo.odb.databases()
    return {e for db in dbs if isinstance(db, PackedDB) for e in db.entities()}


def _pack_count(repo: Repo) -> int:
    folder = Path(repo.odb.root_path(), "pack")
    try:
        return sum(1 for name in os.listdir(folder) if name.endswith(".pack"))
    except OSError:
        return 0


def _short(e: BaseException) -> str:
    import git

    if isinstance(e, git.GitCommandError):
        lines = str(e.stderr).strip().strip("'").splitlines()
        return lines[-1].strip() if lines else f"exit status {e.status}"
    return str(e)


def dir_bytes(path: Path) -> int:
    """The disk space the files under ``path`` take, as ``du`` counts it (whole blocks: a
    200-byte loose object takes 4 KB), else their sizes: ``.git``'s size, for people and benches."""
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(folder, name))
                blocks = getattr(st, "st_blocks", None)
                total += blocks * 512 if blocks is not None else st.st_size
    return total


def pack_now(repo: Repo, counter: Path) -> PackReport:
    """Pack at once (``cortexgraph issues pack``); the caller holds the tracker's lock."""
    git_dir = Path(repo.common_dir)  # a worktree's objects are the main repository's
    before = dir_bytes(git_dir)
    started = time.perf_counter()
    pack(repo)
    seconds = time.perf_counter() - started
    _write_counter(counter, 0)
    return PackReport(before, dir_bytes(git_dir), seconds)


__all__ = [
    "PACK_THRESHOLD",
    "PackReport",
    "dir_bytes",
    "loose_bytes",
    "note_written",
    "pack",
    "pack_now",
    "read_counter",
    "refresh",
]
