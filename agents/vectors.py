"""Text vectors for similarity: sentence embeddings when a model is at hand, TF-IDF otherwise.

The result says which was used, so a report never passes TF-IDF off as semantic similarity.
"""

from __future__ import annotations

import itertools
import logging
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cortexgraph.agents.held_rows import HeldRows, row_norms
from cortexgraph.agents.neighbours import NeighbourPairs, Rows, radius_pairs
from cortexgraph.agents.protocols import Embedder

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TextVectors:
    method: str  # "embeddings:<model>" or "tfidf"
    dense: np.ndarray  # L2-normalised rows used for neighbour search
    sparse: Any = None  # the TF-IDF matrix (scipy CSR, untyped), when method == "tfidf"
    # The rows as an embedding cache holds them, normalised as read (``held_vectors``); then
    # ``dense`` is empty (n x 0) and every read goes through ``rows``.
    held: HeldRows | None = None

    @property
    def is_semantic(self) -> bool:
        return self.method.startswith("embeddings")

    @property
    def rows(self) -> Rows:
        """The L2-normalised rows: ``dense``, or the held rows."""
        return self.dense if self.held is None else self.held

    def pair_similarity(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        if self.sparse is None:
            dots: np.ndarray = np.einsum("ij,ij->i", self.rows[i], self.rows[j])
            return dots
        a = self.sparse[i]
        b = self.sparse[j]
        return np.asarray(a.multiply(b).sum(axis=1)).ravel()

    def neighbours(
        self,
        threshold: float,
        exact_limit: int = 6000,
        max_per_row: int | None = None,
        ranked_from: float | None = None,
    ) -> NeighbourPairs:
        """Pairs at ``threshold`` (radius_pairs; ``ranked_from``: of those kept at that lower
        bar, on the dense rows)."""
        if self.sparse is None:
            return radius_pairs(
                self.rows,
                threshold,
                exact_limit=exact_limit,
                max_per_row=max_per_row,
                ranked_from=ranked_from,
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


def similarity_method(embedder: Embedder | None) -> str:
    """What vectors from ``embedder`` are called (``TextVectors.method``; None: TF-IDF)."""
    return "tfidf" if embedder is None else f"embeddings:{embedder.name}"


def vectorize(
    texts: Sequence[str],
    embedder: Embedder | None,
    corpus: Callable[[], Sequence[str]] | None = None,
) -> TextVectors:
    """Embed ``texts``; fall back to TF-IDF when there is no embedder or it fails to load.
    ``corpus``: the texts TF-IDF is fitted on (``tfidf_vectors``' ``fit_on``), asked only
    when TF-IDF is used."""
    if embedder is not None:
        try:
            vecs = np.asarray(embedder.embed(list(texts)), dtype=np.float32)
            return TextVectors(similarity_method(embedder), vecs / row_norms(vecs))
        except Exception as exc:  # any model failure means "use TF-IDF"
            log.warning("embedding model unavailable (%s); using TF-IDF similarity", exc)
    return tfidf_vectors(texts, fit_on=None if corpus is None else corpus())


# How far the similarity of two texts' held vectors may move when checked on each text's own
# vector (agents.candidate_pairs) where those are the same arrays (an embedder's ``held`` are
# the vectors its ``embed`` answers): only the rounding of two float32 sums of one dot product
# of unit vectors, each within d * 2**-24 of the exact cosine (2.3e-5 at d = 384).
HELD_ROUNDING = 1e-3


def held_vectors(texts: Sequence[str], embedder: Embedder) -> TextVectors | None:
    """The rows ``vectorize`` would give (each normalised alone, so bit for bit in any block),
    without a matrix of them: the vectors an embedder holds (``EmbeddingCache.held``: its own
    arrays, the missing ones embedded first; each text's vector is the same in any order of
    the texts, so no fixed batch order is needed), normalised as the neighbour search reads
    them (agents.held_rows). None when the embedder holds no vectors (no ``held``) or the
    model fails (the caller falls back). ``held`` answers each text the vector ``embed``
    answers it, so a text's own vector is its held one (``HELD_ROUNDING`` apart at most)."""
    held = getattr(embedder, "held", None)
    if held is None:
        return None
    try:
        rows = HeldRows(held(list(texts)))
    except Exception as exc:  # any model failure means "use TF-IDF"
        log.warning("embedding model unavailable (%s); using TF-IDF similarity", exc)
        return None
    empty = np.zeros((len(rows), 0), dtype=np.float32)
    return TextVectors(similarity_method(embedder), empty, held=rows)


def tfidf_vectors(
    texts: Sequence[str], sketch_dims: int = 128, fit_on: Sequence[str] | None = None
) -> TextVectors:
    """TF-IDF rows of ``texts``. ``fit_on``: the corpus whose words make the vocabulary and
    the weights (IDF; default ``texts``): an incremental cluster run's few texts weighed as a
    full run weighs them, among every active memory's."""
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
    except ImportError:  # scikit-learn comes with the `full` extra; the light install hashes
        return hashed_tfidf_vectors(texts, fit_on=fit_on)

    if not texts:
        return TextVectors("tfidf", np.zeros((0, 1), dtype=np.float32))
    tfidf = TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), min_df=1, norm="l2")
    try:
        if fit_on is None:
            sparse = tfidf.fit_transform(texts).tocsr()
        else:
            sparse = tfidf.fit(fit_on).transform(texts).tocsr()
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


_WORD = re.compile(r"(?u)\b\w\w+\b")  # TfidfVectorizer's default token pattern


def _hashed_columns(text: str, dims: int) -> list[int]:
    """The hashed column of each of the text's words and word pairs."""
    words = _WORD.findall(text.lower())
    terms = [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]
    return [zlib.crc32(term.encode()) % dims for term in terms]


def _hashed_df(texts: Sequence[str], dims: int) -> np.ndarray:
    """How many of ``texts`` hold each hashed column (no matrix of them all is made)."""
    df = np.zeros(dims, dtype=np.float64)
    for text in texts:
        df[list(set(_hashed_columns(text, dims)))] += 1.0
    return df


def hashed_tfidf_vectors(
    texts: Sequence[str], dims: int = 4096, fit_on: Sequence[str] | None = None
) -> TextVectors:
    """TF-IDF without scikit-learn (the light install): the same words and word pairs,
    sublinear tf, smooth idf and L2 rows, hashed into ``dims`` dense columns (a collision
    now and then merges two terms' weights; only where no embedding model answers).
    ``fit_on``: the corpus the IDF is counted on (default ``texts``)."""
    n = len(texts)
    counts = np.zeros((n, dims if n else 1), dtype=np.float32)
    for row, text in enumerate(texts):
        for column in _hashed_columns(text, dims):
            counts[row, column] += 1.0
    if not n:
        return TextVectors("tfidf", counts)
    if fit_on is None:
        df = (counts > 0).sum(axis=0)
    else:
        df, n = _hashed_df(fit_on, dims), len(fit_on)
    tf = np.where(counts > 0, 1.0 + np.log(np.maximum(counts, 1.0)), 0.0)
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    dense = (tf * idf).astype(np.float32)
    norms = np.linalg.norm(dense, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return TextVectors("tfidf", dense / norms)


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


__all__ = [
    "HELD_ROUNDING",
    "TextVectors",
    "hashed_tfidf_vectors",
    "held_vectors",
    "similarity_method",
    "tfidf_vectors",
    "vectorize",
]
