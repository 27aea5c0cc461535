"""Errors the monitor has already seen loop, across sessions: a small index for the hook.

    <storage>/monitor/known-errors.json   {"err:<signature>": {pattern, count, error, session,
                                                              context, last_at}}

Written when an alert about an error is recorded; read when a failed call shows an error
signature for the first time in a session. A hit from another session is the spec's
context-triggered timing: the warning comes on the first sight, before any loop. One small
JSON file, so the common path (a call that did not fail) never reads it and a failing one reads
a few kilobytes instead of opening the learning store.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

FILE_NAME = "known-errors.json"
MAX_ENTRIES = 500  # the most recently seen are kept


class KnownErrors:
    def __init__(self, monitor_dir: Path) -> None:
        self.path = monitor_dir / FILE_NAME

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, signature: str) -> dict[str, Any] | None:
        entry = self._read().get(signature)
        return entry if isinstance(entry, dict) else None

    def record(
        self, signature: str, *, pattern_id: str, error: str, session: str, context: str, now: float
    ) -> None:
        """Count one more loop of this error (best effort: a busy lock skips the update)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with FileLock(str(self.path.with_suffix(".lock")), timeout=2.0):
                data = self._read()
                old = data.get(signature) or {}
                data[signature] = {
                    "pattern_id": pattern_id,
                    "error": error[:300],
                    "count": int(old.get("count", 0)) + 1,
                    "session": session,
                    "context": context,
                    "last_at": now,
                }
                if len(data) > MAX_ENTRIES:
                    newest = sorted(data.items(), key=lambda kv: -float(kv[1].get("last_at", 0)))
                    data = dict(newest[:MAX_ENTRIES])
                tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(data), encoding="utf-8")
                tmp.replace(self.path)
        except Timeout:
            return


__all__ = ["FILE_NAME", "KnownErrors"]
