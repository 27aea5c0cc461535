"""Fixtures for search tests: a deterministic fake embedder that counts its calls."""

from __future__ import annotations

import pytest
from fakes import BrokenEmbedder, HashingEmbedder

# Words the fake model "knows" mean the same thing, so dense can match what BM25 cannot.
SYNONYMS = {"automobil": "car", "vehicl": "car"}


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder(synonyms=SYNONYMS)


@pytest.fixture
def broken_embedder() -> BrokenEmbedder:
    return BrokenEmbedder()
