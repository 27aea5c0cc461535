"""Recorded sessions shared by the behaviour-monitor tests (a uniquely named module, so it
can be imported from any test file without colliding with other areas' conftest.py)."""

from __future__ import annotations

from pathlib import Path

from cortexgraph.activation.monitor.replay import load_session

SESSIONS = Path(__file__).parent / "sessions"
LOOP_SESSIONS = sorted(SESSIONS.glob("loop-*.json"))
QUIET_SESSIONS = sorted(SESSIONS.glob("quiet-*.json"))


def session(path: Path) -> dict:
    return load_session(path)
