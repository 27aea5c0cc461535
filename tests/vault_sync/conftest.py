"""Fixtures of the vault tests: a copy of the messy vault, a store, a deterministic embedder."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.text_index import tokenize
from cortexgraph.vault_sync import ObsidianNoteSink

NOW = 1_750_000_000.0
FIXTURES = Path(__file__).parent / "fixtures"


class HashingEmbedder:
    """Bag of words hashed into 64 dims: deterministic, no model, shared words -> similar."""

    name = "hashing-test"

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in tokenize(text):
                out[i, int(hashlib.md5(tok.encode()).hexdigest(), 16) % 64] += 1.0
            norm = np.linalg.norm(out[i])
            if norm:
                out[i] /= norm
        return out


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
