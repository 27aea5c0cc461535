"""The bounded per-session call log and alert state, beside the memory store.

    <storage>/monitor/sessions/<session>.jsonl       one ToolCall per line, newest last
    <storage>/monitor/sessions/<session>.state.json  alerts shown, interventions awaiting outcome
    <storage>/monitor/sessions/<session>.lock        held around read-append-trim

Appends are atomic under a file lock (hooks for parallel tool calls run concurrently). When the
file holds twice the cap it is rewritten (temp file + rename) with the newest ``cap`` lines, so
it stays bounded without a rewrite on every call. Unreadable lines are skipped, never fatal.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from cortexgraph.activation.monitor.calls import ToolCall
from cortexgraph.activation.monitor.errors import SessionLockedError
from cortexgraph.storage.file_cursor import append_whole

DEFAULT_CAP = 200
LOCK_TIMEOUT_S = 2.0
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def session_file_stem(session_id: str) -> str:
    return _SAFE.sub("_", session_id)[:80] or "no-session"


@dataclass(frozen=True, slots=True)
class Appended:
    calls: tuple[ToolCall, ...]  # the newest calls, the appended one last
    state: dict[str, Any]


class SessionLog:
    """One session's calls and alert state under ``directory`` (usually <storage>/monitor)."""

    def __init__(self, directory: Path, session_id: str, cap: int = DEFAULT_CAP) -> None:
        self.session_id = session_id
        self.cap = max(10, cap)
        base = directory / "sessions"
        stem = session_file_stem(session_id)
        self.path = base / f"{stem}.jsonl"
        self.state_path = base / f"{stem}.state.json"
        self._lock = FileLock(str(base / f"{stem}.lock"), timeout=LOCK_TIMEOUT_S)

    @contextmanager
    def locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with self._lock:
                yield
        except Timeout as exc:
            raise SessionLockedError(
                f"session log {self.path} is locked by another process"
            ) from exc

    def _lines(self) -> list[bytes]:
        try:
            return [ln for ln in self.path.read_bytes().split(b"\n") if ln.strip()]
        except FileNotFoundError:
            return []

    @staticmethod
    def _parse(lines: list[bytes]) -> list[ToolCall]:
        calls = []
        for line in lines:
            try:
                calls.append(ToolCall.from_json(json.loads(line)))
            except (ValueError, KeyError, TypeError):
                continue  # a torn line from a crash: skip it
        return calls

    def recent(self, limit: int) -> list[ToolCall]:
        return self._parse(self._lines()[-limit:])

    def read_state(self) -> dict[str, Any]:
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write_state(self, state: dict[str, Any]) -> None:
        """Caller holds ``locked()``."""
        tmp = self.state_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")
        tmp.replace(self.state_path)

    def append(self, call: ToolCall, keep: int) -> Appended:
        """Append ``call``; return the newest ``keep`` calls and the state. Caller holds the lock."""
        line = json.dumps(call.to_json(), ensure_ascii=False).encode("utf-8") + b"\n"
        lines = self._lines()
        if len(lines) + 1 > 2 * self.cap:
            kept = [*lines[-(self.cap - 1) :], line.rstrip(b"\n")]
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(b"\n".join(kept) + b"\n")
            tmp.replace(self.path)
        else:  # whole or not at all: a cut line (a full disk) would swallow the next call's
            append_whole(self.path, line, fsync=False)
        calls = self._parse(lines[-(keep - 1) :]) if keep > 1 else []
        return Appended((*calls, call), self.read_state())


def active_sessions(directory: Path, since: float) -> list[tuple[str, dict[str, Any]]]:
    """(session file stem, state) of sessions whose state changed at or after ``since``."""
    out = []
    for path in sorted((directory / "sessions").glob("*.state.json")):
        try:
            if path.stat().st_mtime < since:
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out.append((path.name.removesuffix(".state.json"), data))
    return out


__all__ = ["DEFAULT_CAP", "Appended", "SessionLog", "active_sessions", "session_file_stem"]
