"""Fixtures for the agents' tests; the fakes themselves live in tests/fakes.py."""

from __future__ import annotations

import pytest
from fakes import HashingEmbedder

from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.storage import InMemoryStore


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def tracker() -> InMemoryIssueTracker:
    return InMemoryIssueTracker()


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()
