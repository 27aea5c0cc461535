"""Shared fixtures of the behaviour-monitor tests: recorded sessions and a fresh monitor."""

from __future__ import annotations

import pytest

from cortexgraph.activation.monitor import Monitor, load_pattern_set


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A Claude Code project with a CLAUDE.md rule about repeated errors, HOME beside it."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "CLAUDE.md").write_text(
        "# Debugging\n- When the same error repeats, find the root cause before editing again.\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(proj))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return proj


@pytest.fixture(scope="session")
def patterns():
    return load_pattern_set()


@pytest.fixture
def monitor(patterns):
    return Monitor(patterns)
