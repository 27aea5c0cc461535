"""Fixtures of the vault tests: a copy of the messy vault, a store, a deterministic embedder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fakes import HashingEmbedder

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import ObsidianNoteSink

NOW = 1_750_000_000.0
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def messy_vault(tmp_path: Path) -> Path:
    vault = tmp_path / "messy"
    shutil.copytree(FIXTURES / "messy_vault", vault)
    return vault


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    path = tmp_path / "vault"
    path.mkdir()
    return path


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def sink(vault: Path) -> ObsidianNoteSink:
    return ObsidianNoteSink(vault, "cortexgraph")


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()
