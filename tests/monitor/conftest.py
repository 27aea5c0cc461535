"""Shared fixtures of the behaviour-monitor tests: recorded sessions and a fresh monitor."""

from __future__ import annotations

from pathlib import Path

import pytest

from activation.monitor import Monitor, load_pattern_set
from activation.monitor.replay import load_session

SESSIONS = Path(__file__).parent / "sessions"
LOOP_SESSIONS = sorted(SESSIONS.glob("loop-*.json"))
QUIET_SESSIONS = sorted(SESSIONS.glob("quiet-*.json"))


@pytest.fixture(scope="session")
def patterns():
    return load_pattern_set()


@pytest.fixture
def monitor(patterns):
    return Monitor(patterns)


def session(path: Path) -> dict:
    return load_session(path)
