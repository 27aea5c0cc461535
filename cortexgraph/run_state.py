"""``<storage>/consolidation-state.json``: what an incremental consolidation run compares with.

Written by every live run (the flow, the MCP ``run_consolidation`` tool) after its record in
``consolidation-runs.jsonl``; read by the next run (agents.changes.ChangeTracker). A missing or
unreadable file means the next run is a full one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

STATE_FILE = "consolidation-state.json"


def load_run_state(storage: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((storage / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == 1 else None


def save_run_state(storage: Path, state: dict[str, Any]) -> None:
    """Written whole to a temporary file, then renamed over the old one."""
    path = storage / STATE_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(state, separators=(",", ":")), encoding="utf-8")
    os.replace(tmp, path)


__all__ = ["STATE_FILE", "load_run_state", "save_run_state"]
