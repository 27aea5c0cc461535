"""Fixtures for search tests: a deterministic fake embedder that counts its calls."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import pytest

from cortexgraph.storage.text_index import tokenize


class CountingEmbedder:
    """Bag-of-stems hashed into 64 dims: texts sharing words are similar. Counts texts embedded."""

    # Words the fake model "knows" mean the same thing, so dense can match what BM25 cannot.
    SYNONYMS: ClassVar[dict[str, str]] = {"automobil": "car", "vehicl": "car"}

    def __init__(self, name: str = "fake-bow") -> None:
        self.name = name
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in tokenize(text):
                term = self.SYNONYMS.get(term, term)
                h = int.from_bytes(hashlib.blake2b(term.encode(), digest_size=4).digest(), "big")
                out[row, h % 64] += 1.0
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else out[row]
        return out


class BrokenEmbedder:
    name = "broken"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from cortexgraph.storage.embeddings import EmbeddingUnavailableError

        raise EmbeddingUnavailableError("model package not installed (test)")


@pytest.fixture
def counting_embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def broken_embedder() -> BrokenEmbedder:
    return BrokenEmbedder()
