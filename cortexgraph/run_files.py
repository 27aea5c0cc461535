"""Which files a consolidation run reads, and what became of them since the last run saw them.

The run state (``cortexgraph.run_state``) records, for a run that saw every write to them be
its own, each file's (inode, size, mtime in ns): ``unchanged_since`` compares them with a few
``stat`` calls; ``appended_ids`` reads only the memories file's lines appended since (the store
only appends between rewrites, and a rewrite bumps the generation file); ``files_seen`` tells a
run's own appends to the relations and issue files from anyone else's. Paths are absolute
(``store_files``), so a store named two ways is one store.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from cortexgraph.storage.backup import GENERATION_NAME
from cortexgraph.storage.jsonl_lines import parse_line

if TYPE_CHECKING:
    from cortexgraph.settings import Settings

FILE_KEY_WIDTH = 3  # inode, size, mtime_ns


def file_keys(paths: list[Path]) -> np.ndarray:
    """What each file is now: (inode, size, mtime_ns), -1s when it does not exist. The
    inode alone cannot tell a rewrite (the filesystem reuses freed inodes at once), so the
    store's generation file is one of the paths: every compaction or quarantine bumps it."""
    keys = np.full((len(paths), FILE_KEY_WIDTH), -1, dtype=np.int64)
    for row, path in enumerate(paths):
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        keys[row] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return keys


def store_files(storage: Path, memories: str, relations: str) -> list[Path]:
    """The files a store's content is read from (names as in ``StoreConfig``), absolute: the
    state keys its files by path, and a store named relatively by one run (the CLI's
    ``--storage-path store`` in a shell) and absolutely by the next (the deployment's
    settings) is the same store; ``os.path.abspath``, not ``resolve``, so no link is
    followed (a path spelled through another link only costs one full comparison)."""
    storage = Path(os.path.abspath(storage))
    return [storage / memories, storage / relations, storage / GENERATION_NAME]


def run_files(settings: Settings, tracker: object = None) -> list[Path]:
    """The files a consolidation run's inputs are read from: the store's (memories,
    relations, generation: in that order), and the issue tracker's file when it has one."""
    paths = store_files(
        settings.storage_path, settings.memories_filename, settings.relations_filename
    )
    issues = getattr(tracker, "path", None)
    return [*paths, Path(os.path.abspath(issues))] if isinstance(issues, Path) else paths


def files_now(paths: list[Path]) -> dict[str, tuple[int, ...]]:
    """``state["files"]`` for a run that wrote these files alone: what they are now."""
    return {str(p): tuple(row) for p, row in zip(paths, file_keys(paths).tolist(), strict=True)}


def appended_ids(
    previous: dict[str, Any] | None, memories: Path, generation: Path
) -> set[str] | None:
    """The ids in the memories file's lines written since the last run recorded it: every
    other memory is as that run's state has it, because the store only appends to the file
    between rewrites, and a rewrite (compaction, quarantine) bumps the generation file. None
    (compare every memory) without a record, after a rewrite (another generation or inode, a
    shorter file), or for a line that is not a whole record with an id (a writer mid-line).
    Read after the store was listed, so that whatever the listing holds is in these lines."""
    files = (previous or {}).get("files") or {}
    mem, gen = files.get(str(memories)), files.get(str(generation))
    if mem is None or gen is None or tuple(file_keys([generation])[0].tolist()) != tuple(gen):
        return None
    return _tail_ids(memories, mem[0], mem[1])


def _tail_ids(path: Path, inode: int, start: int, end: int | None = None) -> set[str] | None:
    """The ids of the records on the lines of ``path`` from byte ``start`` to ``end`` (None:
    its end now). None where the file is not that inode any more, is shorter, or a line is
    not a whole record with an id (a writer mid-line), or ``end`` is before ``start`` (the
    file shrank and grew again between two looks: ``read`` of a negative count would read on
    to the file's end)."""
    if end is not None and end < start:
        return None
    try:
        with path.open("rb") as f:
            st = os.fstat(f.fileno())
            if st.st_ino != inode or st.st_size < max(start, end or 0):
                return None
            f.seek(start)
            tail = f.read() if end is None else f.read(end - start)
    except OSError:
        return None
    if tail and not tail.endswith(b"\n"):
        return None
    ids: set[str] = set()
    for line in tail.splitlines():
        if not line.strip():
            continue
        try:
            record = parse_line(line)  # as the store reads it: orjson, then json's verdict
        except ValueError:
            return None
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            return None
        ids.add(record["id"])
    return ids


class IssueWitness(Protocol):
    """What a run's issue batch saw of the tracker's file (storage.beads.batch.BatchState)."""

    @property
    def others_wrote(self) -> bool: ...
    @property
    def left(self) -> tuple[int, int, int] | None: ...


def files_seen(
    paths: list[Path],
    opened: Mapping[str, tuple[int, ...]],
    ours: Collection[str],
    issue_batch: IssueWitness | None = None,
) -> dict[str, tuple[int, ...]] | None:
    """``files_now(paths)`` (``run_files``' paths) for a run's state, or None where someone
    else wrote a relation or an issue since the run's open (``opened``: ``files_now`` then):
    the state must not take those files as seen, or the next run would not look (it opens
    the store instead). The relations file must be as it was, or have grown in the same
    generation only by lines of the relations the run wrote itself (``ours``:
    ``WriteLog.relations``); the issue file as it was, or as the run's own issue batch left
    it with no one else writing while it was open (no batch: as it was). Memories others
    wrote are told apart by the state itself (agents.changes.ChangeTracker.refresh)."""
    ended = files_now(paths)
    _, relations, generation, *issues = paths
    if _relations_moved(opened, ended, relations, generation, ours):
        return None
    if issues and _issues_moved(opened, ended, issues[0], issue_batch):
        return None
    return ended


def _issues_moved(
    opened: Mapping[str, tuple[int, ...]],
    ended: Mapping[str, tuple[int, ...]],
    path: Path,
    batch: IssueWitness | None,
) -> bool:
    before, after = opened.get(str(path)), ended.get(str(path))
    if before == after:
        return False
    if batch is None or after is None:
        return True  # it moved, and nothing tells whose change it was
    return batch.others_wrote or tuple(after) != (batch.left or (-1,) * FILE_KEY_WIDTH)


def _relations_moved(
    opened: Mapping[str, tuple[int, ...]],
    ended: Mapping[str, tuple[int, ...]],
    relations: Path,
    generation: Path,
    ours: Collection[str],
) -> bool:
    """The relations file changed between ``opened`` and ``ended`` by more than the run's own
    appends: a compaction, another inode, a line that is not one of ``ours``."""
    before, after = opened.get(str(relations)), ended.get(str(relations))
    if before == after:
        return False
    if before is None or after is None or opened.get(str(generation)) != ended.get(str(generation)):
        return True
    if before[0] >= 0 and before[0] != after[0]:
        return True
    ids = _tail_ids(relations, after[0], max(before[1], 0), after[1])
    return ids is None or not ids <= set(ours)


__all__ = [
    "FILE_KEY_WIDTH",
    "IssueWitness",
    "appended_ids",
    "file_keys",
    "files_now",
    "files_seen",
    "run_files",
    "store_files",
]
