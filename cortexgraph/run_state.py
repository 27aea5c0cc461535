"""``<storage>/consolidation-state.npz``: what an incremental consolidation run compares with.

Written by every live run (the flow, the MCP ``run_consolidation`` tool) after its record in
``consolidation-runs.jsonl``; read by the next run (agents.changes.ChangeTracker). A missing or
unreadable file means the next run is a full one.

Arrays, not JSON: one row per memory (its id, fingerprint and next decay crossing time, inf for
none) and one per fading memory (its id, urgency and forget moment: what the decay digests need
of it), read and written whole by numpy, without pickle. At 100k memories the JSON form (9 MB)
cost ~0.6 CPU s a run to parse, build and write; every run pays it, a run after no change too.
The 1.x JSON file (``consolidation-state.json``) is still read when no array file is there.

A run that saw every write to the store files be its own also records what those files were
when it ended (``files``: path, then inode, size and mtime in ns, or -1s for a missing file) and
the earliest predicted decay crossing (``next_due``): ``unchanged_since`` tells the next run,
from a few ``stat`` calls and without opening the store, that nothing can have changed.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from cortexgraph.storage.backup import GENERATION_NAME
from cortexgraph.storage.jsonl_lines import gc_paused, parse_line
from cortexgraph.storage.memory_rows import DUE_TYPE, PRINT_TYPE, MemoryRows

if TYPE_CHECKING:
    from cortexgraph.settings import Settings

STATE_FILE = "consolidation-state.npz"
OLD_STATE_FILE = "consolidation-state.json"
# 3: fingerprints cover a memory's creation time and mentions (agents.changes.fingerprint):
# every version 2 print would differ, and a run comparing them would take every memory for
# changed; a state of another version is not read, so the first run after is a full one.
VERSION = 3


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


def unchanged_since(
    storage: Path,
    paths: list[Path],
    now: float,
    config: int | None = None,
    gc: bool = False,
    merges: bool = False,
    embeddings: bool | None = None,
) -> float | None:
    """The last run's clock when nothing can have changed since it: it recorded ``paths``
    (and maybe more, the issue tracker's file), every recorded file is as it left it, no
    memory's predicted decay crossing has come by ``now``, (``config`` given) it judged
    under the same configuration (agents.decision_key), (``gc``: this run's gc acts) it
    left no memory gc would take (agents.run_scope.RunScope.gc_settled), and (``merges``: this
    run merges) no cluster it found unmerged (RunScope.unmerged), it promoted or merged
    nothing after its cluster step (RunScope.departed), and (``embeddings`` given)
    it wanted embeddings as this run does (agents.changes.ChangeTracker.embeddings). None
    otherwise (no record, a clock before the last run's,
    record, another file set, any difference, a crossing due, an unreadable state). Reads
    only the state's small arrays, not its rows."""
    try:
        with np.load(storage / STATE_FILE, allow_pickle=False) as data:
            if int(data["version"]) != VERSION or "files" not in data.files:
                return None
            if config is not None and _config(data) != config:
                return None
            if gc and not _gc_settled(data):
                return None
            if merges and "unmerged" in data.files and data["unmerged"].size:
                return None
            if "departed" in data.files and data["departed"].size:
                return None  # what left lets its neighbours cluster: the next run looks
            if embeddings is not None and _embeddings(data) is not embeddings:
                return None
            recorded, keys = _strings(data["file_paths"]), data["files"]
            next_due, since = float(data["next_due"]), float(data["now"])
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError, zipfile.BadZipFile):
        return None
    if not set(map(str, paths)) <= set(recorded) or keys.shape != (len(recorded), FILE_KEY_WIDTH):
        return None
    if now < since:  # the clock set back: the last run judged at a later moment
        return None
    if next_due <= now or not np.array_equal(file_keys([Path(p) for p in recorded]), keys):
        return None
    return since


def load_run_state(storage: Path) -> dict[str, Any] | None:
    """``{"version", "now", "memories": {id: (fingerprint, crossing time)}, "fading": [ids],
    "fading_marks": {id: (urgency, forget moment)}, "files": {path: (inode, size, mtime_ns)},
    "config": the configuration's key or None, "entity_standing": {"too_common": [names],
    "rare": [names]} or None, "gc_settled": bool, "unmerged": [ids], "departed": [ids],
    "similarity": the cluster step's method or None, "embeddings": whether the run wanted
    them, or None}``,
    or None: no state, or one that cannot be read. ``memories`` is the file's arrays as a
    read-only mapping (storage.memory_rows.MemoryRows): no dict of every memory is built."""
    path = storage / STATE_FILE
    if not path.exists():
        return _load_json(storage / OLD_STATE_FILE)
    # With the collector paused: the rows set off a full pass over the open store (0.15 s
    # at 100k memories), and are kept for the run (storage.jsonl_lines.gc_paused).
    with gc_paused():
        try:
            with np.load(path, allow_pickle=False) as data:
                if int(data["version"]) != VERSION:
                    return None
                ids, fading = _strings(data["ids"]), _strings(data["fading"])
                prints = data["prints"].astype(PRINT_TYPE, copy=False)
                due = data["due"].astype(DUE_TYPE, copy=False)
                now = float(data["now"])
                marks = _marks(data, fading)
                files = _files(data)
                config = _config(data)
                standing = _standing(data)
                gc_settled = _gc_settled(data)
                unmerged = _strings(data["unmerged"]) if "unmerged" in data.files else []
                departed = _strings(data["departed"]) if "departed" in data.files else []
                similarity = _text(data, "similarity")
                embeddings = _embeddings(data)
            memories = MemoryRows(ids, prints, due)
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError, zipfile.BadZipFile):
            return None
        return {
            "version": VERSION,
            "now": now,
            "memories": memories,
            "fading": fading,
            "fading_marks": marks,
            "files": files,
            "config": config,
            "entity_standing": standing,
            "gc_settled": gc_settled,
            "unmerged": unmerged,
            "departed": departed,
            "similarity": similarity,
            "embeddings": embeddings,
        }


def _config(data: Any) -> int | None:
    """The configuration the state was taken under (agents.decision_key); None: not recorded."""
    return int(data["config"]) if "config" in data.files else None


def _gc_settled(data: Any) -> bool:
    """Whether the run left no memory gc would take; False in a file without the record."""
    return bool(data["gc_settled"]) if "gc_settled" in data.files else False


def _text(data: Any, name: str) -> str | None:
    return data[name].tobytes().decode("utf-8") if name in data.files else None


def _embeddings(data: Any) -> bool | None:
    """Whether the run wanted embeddings; None in a file without the record."""
    return bool(data["embeddings"]) if "embeddings" in data.files else None


def _standing(data: Any) -> dict[str, Any] | None:
    """The entities' standing the last relations step judged by (agents.entity_standing),
    as JSON text (a name may hold a newline); None in a file without it."""
    if "entity_standing" not in data.files:
        return None
    raw = json.loads(data["entity_standing"].tobytes().decode("utf-8"))
    return raw if isinstance(raw, dict) else None


def _files(data: Any) -> dict[str, tuple[int, ...]]:
    """The recorded files, {path: (inode, size, mtime_ns)}; none in a file without them."""
    if "files" not in data.files:
        return {}
    paths, keys = _strings(data["file_paths"]), data["files"].tolist()
    return dict(zip(paths, map(tuple, keys), strict=True)) if len(paths) == len(keys) else {}


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


def _marks(data: Any, fading: list[str]) -> dict[str, tuple[str, float]]:
    """The fading memories' (urgency, forget moment), row for row with ``fading``; none in a
    file from before them (the decay run then scores those memories once)."""
    if "fading_urgency" not in data.files:
        return {}
    urgency, at = _strings(data["fading_urgency"]), data["fading_at"].tolist()
    if not len(urgency) == len(at) == len(fading):
        return {}
    return {i: (u, t) for i, u, t in zip(fading, urgency, at, strict=True) if u}


def _strings(blob: np.ndarray) -> list[str]:
    """Ids joined by newlines as UTF-8 (a memory id holds no newline): 3.7 MB at 100k
    memories where an array of fixed-width strings took 27."""
    text = blob.tobytes().decode("utf-8")
    return text.split("\n") if text else []


def _blob(strings: list[str]) -> np.ndarray:
    return np.frombuffer("\n".join(strings).encode("utf-8"), dtype=np.uint8)


def _load_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == 1 else None


def _fading_arrays(state: dict[str, Any]) -> dict[str, np.ndarray]:
    """The fading ids and, row for row, their marks ("" and nan where a mark is missing)."""
    fading = sorted(state.get("fading") or ())
    marks: dict[str, tuple[str, float]] = state.get("fading_marks") or {}
    rows = [marks.get(i, ("", math.nan)) for i in fading]
    return {
        "fading": _blob(fading),
        "fading_urgency": _blob([str(u) for u, _ in rows]),
        "fading_at": np.fromiter((t for _, t in rows), dtype=np.float64, count=len(rows)),
    }


def _file_arrays(state: dict[str, Any], due: np.ndarray) -> dict[str, np.ndarray]:
    """``state["files"]``: {path: (inode, size, mtime_ns)} of the files the run ended with,
    set only by a run that wrote them alone; with it, the earliest crossing time."""
    files: dict[str, Any] = state.get("files") or {}
    if not files:
        return {}
    return {
        "file_paths": _blob(list(files)),
        "files": np.array(list(files.values()), dtype=np.int64).reshape(len(files), FILE_KEY_WIDTH),
        "next_due": np.array(float(due.min()) if len(due) else math.inf),
    }


def save_run_state(storage: Path, state: dict[str, Any]) -> None:
    """Written whole to a temporary file, then renamed over the old one."""
    # A run's state holds its rows as arrays already (storage.memory_rows): written as they are.
    memories = MemoryRows.of(state["memories"])
    prints = memories.prints.astype(PRINT_TYPE, copy=False)
    due = memories.due.astype(DUE_TYPE, copy=False)
    path = storage / STATE_FILE
    tmp = path.with_name(f".{STATE_FILE}.{os.getpid()}.tmp.npz")
    try:
        arrays = {
            "version": np.array(VERSION),
            "now": np.array(float(state["now"])),
            "ids": _blob(memories.ids),
            "prints": prints,
            "due": due,
            **_fading_arrays(state),
            **_file_arrays(state, due),
        }
        if state.get("config") is not None:
            arrays["config"] = np.array(int(state["config"]), dtype=np.uint32)
        if state.get("similarity") is not None:
            arrays["similarity"] = np.frombuffer(state["similarity"].encode("utf-8"), np.uint8)
        if state.get("embeddings") is not None:
            arrays["embeddings"] = np.array(bool(state["embeddings"]))
        if state.get("unmerged"):
            arrays["unmerged"] = _blob(sorted(state["unmerged"]))
        if state.get("departed"):
            arrays["departed"] = _blob(sorted(state["departed"]))
        if state.get("gc_settled") is not None:
            arrays["gc_settled"] = np.array(bool(state["gc_settled"]))
        if state.get("entity_standing") is not None:
            text = json.dumps(state["entity_standing"], ensure_ascii=False)
            arrays["entity_standing"] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        np.savez(tmp, **arrays)  # type: ignore[arg-type]  # numpy's stub: ``allow_pickle``
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    (storage / OLD_STATE_FILE).unlink(missing_ok=True)  # the next run reads this one


__all__ = [
    "STATE_FILE",
    "appended_ids",
    "file_keys",
    "files_now",
    "files_seen",
    "load_run_state",
    "run_files",
    "save_run_state",
    "store_files",
    "unchanged_since",
]
