"""An incremental cluster run's memories: the changed ones and their near neighbours.

The changed memories are compared with every active memory through the existing vectors (the
embedding cache's, or TF-IDF fitted on the whole store): one row per changed memory, never all
n² pairs. Those within reach of the cluster detector's lowest bar (less a margin) join them;
the detector then links and groups that small set as it would the whole store, and keeps the
clusters and related pairs that hold a changed memory.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from cortexgraph.agents.protocols import Embedder
from cortexgraph.agents.vectors import vectorize
from cortexgraph.storage.models import Memory


def neighbourhood(
    memories: Sequence[Memory],
    scope: Collection[str],
    embedder: Embedder | None,
    *,
    bar: float,
    per_row: int,
) -> list[Memory]:
    """``memories`` (sorted by id) cut down to those in ``scope`` and, for each, up to
    ``per_row`` others at least ``bar`` similar; in the same order."""
    rows = [k for k, m in enumerate(memories) if m.id in scope]
    if not rows or len(rows) == len(memories):
        return [memories[k] for k in rows]
    texts = [m.content for m in memories]
    sparse = _tfidf(texts) if embedder is None else None
    if sparse is not None:  # exact TF-IDF rows; no sketch of the whole store is needed
        sims = np.asarray((sparse[rows] @ sparse.T).todense(), dtype=np.float32)
    else:
        vectors = vectorize(texts, embedder)
        if vectors.sparse is not None:
            sims = np.asarray((vectors.sparse[rows] @ vectors.sparse.T).todense(), dtype=np.float32)
        else:
            sims = vectors.dense[rows] @ vectors.dense.T
    keep = set(rows)
    for r in range(sims.shape[0]):
        row = sims[r]
        near = np.flatnonzero(row >= bar)
        if len(near) > per_row + 1:
            near = near[np.argsort(-row[near], kind="stable")[: per_row + 1]]
        keep.update(int(k) for k in near)
    return [memories[k] for k in sorted(keep)]


def _tfidf(texts: list[str]) -> Any:
    """The detector's TF-IDF (agents.vectors.tfidf_vectors) without its dense sketch; None
    without scikit-learn or words."""
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
    except ImportError:
        return None
    tfidf = TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), min_df=1, norm="l2")
    try:
        return tfidf.fit_transform(texts).tocsr()
    except ValueError:
        return None


def touches(ids: Sequence[str], scope: Collection[str]) -> bool:
    return any(i in scope for i in ids)


__all__ = ["neighbourhood", "touches"]
