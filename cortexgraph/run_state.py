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
Which files those are, and what became of them: ``cortexgraph.run_files`` (its names are
imported from here too).
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from cortexgraph.run_files import (
    FILE_KEY_WIDTH,
    appended_ids,
    file_keys,
    files_now,
    files_seen,
    run_files,
    store_files,
)
from cortexgraph.storage.jsonl_lines import gc_paused
from cortexgraph.storage.memory_rows import DUE_TYPE, PRINT_TYPE, MemoryRows

STATE_FILE = "consolidation-state.npz"
OLD_STATE_FILE = "consolidation-state.json"
# 3: fingerprints cover a memory's creation time and mentions (agents.changes.fingerprint):
# every version 2 print would differ, and a run comparing them would take every memory for
# changed; a state of another version is not read, so the first run after is a full one.
VERSION = 3


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
    run merges) no cluster it found unmerged (RunScope.unmerged), and (``embeddings``
    given) it wanted embeddings as this run does (agents.changes.ChangeTracker.embeddings). None
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
    "rare": [names]} or None, "gc_settled": bool, "unmerged": [ids],
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
