"""Shared fixtures of the behaviour-monitor tests: recorded sessions and a fresh monitor."""

from __future__ import annotations

import pytest

from cortexgraph.activation.monitor import Monitor, load_pattern_set


@pytest.fixture(scope="session")
def patterns():
    return load_pattern_set()


@pytest.fixture
def monitor(patterns):
    return Monitor(patterns)
