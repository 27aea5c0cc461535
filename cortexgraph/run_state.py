"""``<storage>/consolidation-state.npz``: what an incremental consolidation run compares with.

Written by every live run (the flow, the MCP ``run_consolidation`` tool) after its record in
``consolidation-runs.jsonl``; read by the next run (agents.changes.ChangeTracker). A missing or
unreadable file means the next run is a full one.

Arrays, not JSON: one row per memory (its id, fingerprint and next decay crossing time, inf for
none) and one per fading memory (its id, urgency and forget moment: what the decay digests need
of it), read and written whole by numpy, without pickle. At 100k memories the JSON form (9 MB)
cost ~0.6 CPU s a run to parse, build and write; every run pays it, a run after no change too.
The 1.x JSON file (``consolidation-state.json``) is still read when no array file is there.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

STATE_FILE = "consolidation-state.npz"
OLD_STATE_FILE = "consolidation-state.json"
VERSION = 2


def load_run_state(storage: Path) -> dict[str, Any] | None:
    """``{"version", "now", "memories": {id: (fingerprint, crossing time)}, "fading": [ids],
    "fading_marks": {id: (urgency, forget moment)}}``, or None: no state, or one that cannot be
    read."""
    path = storage / STATE_FILE
    if not path.exists():
        return _load_json(storage / OLD_STATE_FILE)
    try:
        with np.load(path, allow_pickle=False) as data:
            if int(data["version"]) != VERSION:
                return None
            ids, fading = _strings(data["ids"]), _strings(data["fading"])
            prints, due = data["prints"].tolist(), data["due"].tolist()
            now = float(data["now"])
            marks = _marks(data, fading)
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError, zipfile.BadZipFile):
        return None
    if not len(ids) == len(prints) == len(due):
        return None
    return {
        "version": VERSION,
        "now": now,
        "memories": dict(zip(ids, zip(prints, due, strict=True), strict=True)),
        "fading": fading,
        "fading_marks": marks,
    }


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


def save_run_state(storage: Path, state: dict[str, Any]) -> None:
    """Written whole to a temporary file, then renamed over the old one."""
    memories: dict[str, Any] = state["memories"]
    n = len(memories)
    rows = memories.values()
    prints = np.fromiter((int(r[0]) for r in rows), dtype=np.uint32, count=n)
    due = (math.inf if r[1] is None else float(r[1]) for r in rows)
    path = storage / STATE_FILE
    tmp = path.with_name(f".{STATE_FILE}.{os.getpid()}.tmp.npz")
    try:
        arrays = {
            "version": np.array(VERSION),
            "now": np.array(float(state["now"])),
            "ids": _blob(list(memories)),
            "prints": prints,
            "due": np.fromiter(due, dtype=np.float64, count=n),
            **_fading_arrays(state),
        }
        np.savez(tmp, **arrays)  # type: ignore[arg-type]  # numpy's stub: ``allow_pickle``
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    (storage / OLD_STATE_FILE).unlink(missing_ok=True)  # the next run reads this one


__all__ = ["STATE_FILE", "load_run_state", "save_run_state"]
