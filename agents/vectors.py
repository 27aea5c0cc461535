"""Text vectors for similarity: sentence embeddings when a model is at hand, TF-IDF otherwise.

The result says which was used, so a report never passes TF-IDF off as semantic similarity.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cortexgraph.agents.neighbours import NeighbourPairs, radius_pairs
from cortexgraph.agents.protocols import Embedder

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TextVectors:
    method: str  # "embeddings:<model>" or "tfidf"
    dense: np.ndarray  # L2-normalised rows used for neighbour search
    sparse: Any = None  # the TF-IDF matrix (scipy CSR, untyped), when method == "tfidf"

    @property
    def is_semantic(self) -> bool:
        return self.method.startswith("embeddings")

    def pair_similarity(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        if self.sparse is None:
            dots: np.ndarray = np.einsum("ij,ij->i", self.dense[i], self.dense[j])
            return dots
        a = self.sparse[i]
        b = self.sparse[j]
        return np.asarray(a.multiply(b).sum(axis=1)).ravel()

    def neighbours(
        self, threshold: float, exact_limit: int = 6000, max_per_row: int | None = None
    ) -> NeighbourPairs:
        if self.sparse is None:
            return radius_pairs(
                self.dense, threshold, exact_limit=exact_limit, max_per_row=max_per_row
            )
        if self.dense.shape[0] <= exact_limit:
            return _sparse_exact(self.sparse, threshold)
        return radius_pairs(
            self.dense,
            threshold,
            exact_limit=exact_limit,
            rescore=self.pair_similarity,
            max_per_row=max_per_row,
        )


def vectorize(texts: Sequence[str], embedder: Embedder | None) -> TextVectors:
    """Embed ``texts``; fall back to TF-IDF when there is no embedder or it fails to load."""
    if embedder is not None:
        try:
            vecs = np.asarray(embedder.embed(list(texts)), dtype=np.float32)
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            return TextVectors(f"embeddings:{embedder.name}", vecs / norms)
        except Exception as exc:  # any model failure means "use TF-IDF"
            log.warning("embedding model unavailable (%s); using TF-IDF similarity", exc)
    return tfidf_vectors(texts)


def tfidf_vectors(texts: Sequence[str], sketch_dims: int = 128) -> TextVectors:
    from sklearn.feature_extraction.text import TfidfVectorizer

    if not texts:
        return TextVectors("tfidf", np.zeros((0, 1), dtype=np.float32))
    tfidf = TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), min_df=1, norm="l2")
    try:
        sparse = tfidf.fit_transform(texts).tocsr()
    except ValueError:  # every text is empty of words
        return TextVectors("tfidf", np.zeros((len(texts), 1), dtype=np.float32))
    if sparse.shape[1] > sketch_dims:
        # A low-rank sketch finds candidate pairs; they are re-scored on the exact TF-IDF rows.
        from sklearn.decomposition import TruncatedSVD

        dense = TruncatedSVD(n_components=sketch_dims, random_state=0).fit_transform(sparse)
    else:
        dense = sparse.toarray()
    dense = dense.astype(np.float32)
    norms = np.linalg.norm(dense, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return TextVectors("tfidf", dense / norms, sparse)


def _sparse_exact(sparse: object, threshold: float, block: int = 1024) -> NeighbourPairs:
    n = sparse.shape[0]  # type: ignore[attr-defined]
    if n < 2:
        return radius_pairs(np.zeros((n, 1), dtype=np.float32), threshold)
    out_i, out_j, out_s = [], [], []
    for start in range(0, n, block):
        sims = (sparse[start : start + block] @ sparse[start:].T).tocoo()  # type: ignore[index]
        rows, cols = sims.row + start, sims.col + start
        keep = (cols > rows) & (sims.data >= threshold)
        out_i.append(rows[keep])
        out_j.append(cols[keep])
        out_s.append(sims.data[keep])
    cat = np.concatenate
    return NeighbourPairs(
        cat(out_i).astype(np.int64),
        cat(out_j).astype(np.int64),
        cat(out_s).astype(np.float32),
        "exact (sparse)",
        n * (n - 1) // 2,
    )


__all__ = ["TextVectors", "tfidf_vectors", "vectorize"]
