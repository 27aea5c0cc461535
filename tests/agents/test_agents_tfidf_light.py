"""TF-IDF without scikit-learn (the light install, issue 35): the hashed numpy version ranks
pairs as scikit-learn's does, and clustering without an embedder uses it where sklearn is absent."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from cortexgraph.agents.vectors import hashed_tfidf_vectors, tfidf_vectors

TEXTS = [
    "the payments API failed twice this week",
    "payments API failed again on Friday",
    "Mei prefers Rust over Go for the search service",
    "Rust was chosen for the search service by Mei",
    "lunch on Thursday",
    "",
]


def test_hashed_tfidf_agrees_with_scikit_learns() -> None:
    pytest.importorskip("sklearn")
    hashed = hashed_tfidf_vectors(TEXTS)
    exact = tfidf_vectors(TEXTS, sketch_dims=10_000)  # no SVD sketch: the exact rows
    assert hashed.method == exact.method == "tfidf"
    ref = np.asarray((exact.sparse @ exact.sparse.T).toarray())
    assert np.allclose(hashed.dense @ hashed.dense.T, ref, atol=0.02)


def test_without_scikit_learn_tfidf_is_hashed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.feature_extraction.text", None)
    vectors = tfidf_vectors(TEXTS)
    assert vectors.method == "tfidf" and vectors.sparse is None
    pairs = vectors.neighbours(0.3)
    found = {(int(i), int(j)) for i, j in zip(pairs.i, pairs.j, strict=True)}
    assert (0, 1) in found and (2, 3) in found and (0, 4) not in found


def test_rows_fitted_on_a_corpus_are_the_corpus_rows() -> None:
    """``fit_on``: an incremental cluster run's few texts weighed as in the whole store."""
    few = [TEXTS[1], TEXTS[3]]
    hashed = hashed_tfidf_vectors(few, fit_on=TEXTS)
    assert np.allclose(hashed.dense, hashed_tfidf_vectors(TEXTS).dense[[1, 3]])
    pytest.importorskip("sklearn")
    exact = tfidf_vectors(few, sketch_dims=10_000, fit_on=TEXTS)
    whole = tfidf_vectors(TEXTS, sketch_dims=10_000)
    assert np.allclose(exact.sparse.toarray(), whole.sparse[[1, 3]].toarray())
