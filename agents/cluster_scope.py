"""An incremental cluster run's memories: the changed ones and their near neighbours.

The changed memories are compared with every active memory through the existing vectors (the
embedding cache's, or TF-IDF fitted on the whole store): one row per changed memory, never all
n² pairs. Those within reach of the cluster detector's lowest bar (less a margin) join them;
the detector then links and groups that small set as it would the whole store, and keeps the
clusters and related pairs that hold a changed memory.

The comparison is one float32 matrix product per block of the store's rows (changed rows x
``BLOCK``): the store's vectors are never stacked whole (107 MB at 69k active memories, and
as much again normalised) and no similarity matrix of the changed rows against the whole
store is made (355 MB at 1,278 changed); what passes the bar is kept as (row, column,
similarity) triples, cut to each row's strongest whenever they grow past a bound.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterator, Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from cortexgraph.agents.held_rows import distinct, row_norms
from cortexgraph.agents.protocols import Embedder
from cortexgraph.agents.vectors import tfidf_vectors
from cortexgraph.storage.models import Memory

log = logging.getLogger(__name__)

BLOCK = 4096  # store rows compared at once (a 1,236 x 4,096 float32 product is 20 MB)

# The store's rows at some positions (a slice, or an array of them), L2-normalised.
_Rows = Callable[[slice | np.ndarray], np.ndarray]


def neighbourhood(
    memories: Sequence[Memory],
    scope: Collection[str],
    embedder: Embedder | None,
    *,
    bar: float,
    per_row: int,
    block: int = BLOCK,
) -> list[Memory]:
    """``memories`` (sorted by id) cut down to those in ``scope`` and, for each, up to
    ``per_row`` others at least ``bar`` similar (the strongest; on a tie the first); in the
    same order."""
    rows = _places(memories, scope)
    if not len(rows) or len(rows) == len(memories):
        return [memories[k] for k in rows.tolist()]
    texts = [m.content for m in memories]
    sims = _similarity_blocks(texts, rows, embedder, max(1, block))
    near = _strongest(sims, bar, per_row + 1, len(rows))  # a row's own column is among them
    return [memories[k] for k in distinct(np.concatenate((rows, near))).tolist()]


def _places(memories: Sequence[Memory], scope: Collection[str]) -> np.ndarray:
    """The positions of ``scope``'s ids in ``memories`` (sorted by id), ascending. A small
    scope's are found by bisection, not by a scan of every memory (68.8k active at 100k:
    25 ms a run for one changed memory); a scan is cheaper past an eighth of the store."""
    n = len(memories)
    if len(scope) >= n // 8:
        return np.array([k for k, m in enumerate(memories) if m.id in scope], dtype=np.int64)
    by_id = attrgetter("id")
    found = []
    for memory_id in set(scope):
        k = bisect_left(memories, memory_id, key=by_id)
        if k < n and memories[k].id == memory_id:
            found.append(k)
    found.sort()
    return np.array(found, dtype=np.int64)


def _similarity_blocks(
    texts: list[str], rows: np.ndarray, embedder: Embedder | None, block: int
) -> Iterator[tuple[int, np.ndarray]]:
    """(first column, the changed rows' similarities with that block of the store), over the
    store: cosine of the embedder's vectors, else of TF-IDF fitted on the store."""
    dense = _embedded(texts, embedder) if embedder is not None else None
    if dense is None:
        sparse = _tfidf(texts)
        if sparse is not None:  # exact TF-IDF rows; no sketch of the whole store is needed
            query = sparse[rows]
            for start in range(0, len(texts), block):
                part = query @ sparse[start : start + block].T
                yield start, np.asarray(part.toarray(), dtype=np.float32)
            return
        dense = _matrix_rows(tfidf_vectors(texts).dense)
    query = dense(rows)
    for start in range(0, len(texts), block):
        # The block times the changed rows, transposed: the same products as the changed
        # rows times the block (each a dot product of two rows), at a third of the time
        # for a hundred changed rows (BLAS is slow with few rows on the left).
        yield start, (dense(slice(start, start + block)) @ query.T).T


def _embedded(texts: list[str], embedder: Embedder) -> _Rows | None:
    """The store's vectors as the detector reads them (agents.vectors: each row normalised
    alone, so the same in any block): gathered from the arrays an embedding cache holds
    (``held_rows``: never stacked whole, and no per-row stacking of its arrays either) or the
    embedder's matrix; None when the model fails (TF-IDF then)."""
    held_rows = getattr(embedder, "held_rows", None)
    try:
        if held_rows is None:
            return _matrix_rows(np.asarray(embedder.embed(texts), dtype=np.float32))
        gathered = held_rows(texts)
    except Exception as exc:  # any model failure means "use TF-IDF", as agents.vectors
        log.warning("embedding model unavailable (%s); using TF-IDF similarity", exc)
        return None

    def normalised(index: slice | np.ndarray) -> np.ndarray:
        part: np.ndarray = gathered[index]  # a new array: the held ones stay as they are
        np.divide(part, row_norms(part), out=part)
        return part

    return normalised


def _matrix_rows(matrix: np.ndarray) -> _Rows:
    def normalised(index: slice | np.ndarray) -> np.ndarray:
        part: np.ndarray = matrix[index] / row_norms(matrix[index])
        return part

    return normalised


def _strongest(
    blocks: Iterator[tuple[int, np.ndarray]], bar: float, cap: int, n_rows: int
) -> np.ndarray:
    """The columns among each row's ``cap`` strongest similarities at least ``bar`` (ties:
    the lower column), over all blocks. The triples kept are cut back to each row's ``cap``
    after every block, so they stay bounded.

    Below a row's cap-th strongest so far (its floor), nothing is among its cap strongest
    overall (ties at the floor are kept): a block's entries under it, or under the bar, are
    never gathered. Nor are those under a row's cap-th strongest within the block itself
    (``_within_cap``), before the triples are sorted: sorting every entry at the bar was
    10 ms for 100 changed rows at 10k (72k triples), partitioning the first block's rows
    whole 3 ms of a 9 ms neighbourhood at 10k."""
    kept: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    least: np.ndarray | None = None  # each row's least similarity that can still be kept
    for start, sims in blocks:
        if least is None:  # the bar as the similarities' type, as ``sims >= bar`` casts it
            least = np.full(n_rows, bar, dtype=sims.dtype)
        r, c = np.nonzero(sims >= least[:, None])
        found = _within_cap(r, c + start, sims[r, c], cap)
        kept, floor = _cut([found] if kept is None else [kept, found], cap, n_rows)
        np.maximum(least, floor, out=least)
    return distinct(kept[1]) if kept is not None else np.zeros(0, dtype=np.int64)


def _within_cap(
    r: np.ndarray, c: np.ndarray, s: np.ndarray, cap: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of (row, column, similarity) triples, rows ascending, those at least their row's
    cap-th strongest among them (ties kept): a row's cap strongest overall are among them.
    Each row's similarities are partitioned in a row of a padded matrix as wide as the most
    any row has, not as wide as the block."""
    counts = np.bincount(r)
    most = int(counts.max(initial=0))
    if most <= cap:
        return r, c, s
    place = np.arange(len(r)) - (np.cumsum(counts) - counts)[r]
    # Negated, so the padding sorts last: partitioning at the top of rows mostly padding
    # was as slow as partitioning the whole block (4 ms at 100 x 818 against 0.4).
    negated = np.full((len(counts), most), np.inf, dtype=s.dtype)
    negated[r, place] = -s
    floor = -np.partition(negated, cap - 1, axis=1)[:, cap - 1]
    keep = ~(s < floor[r])
    return r[keep], c[keep], s[keep]


def _cut(
    triples: list[tuple[np.ndarray, np.ndarray, np.ndarray]], cap: int, n_rows: int
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """Each row's ``cap`` strongest (row, column, similarity) triples (ties: the lower
    column), and each row's cap-th strongest similarity among them (-inf: fewer)."""
    r, c, s = (np.concatenate(parts) for parts in zip(*triples, strict=True))
    order = np.lexsort((c, -s, r))
    r, c, s = r[order], c[order], s[order]
    rank = np.arange(len(r)) - np.searchsorted(r, r, side="left")
    keep = rank < cap
    floor = np.full(n_rows, -np.inf, dtype=s.dtype)
    last = rank == cap - 1
    floor[r[last]] = s[last]
    return (r[keep], c[keep], s[keep]), floor


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


__all__ = ["BLOCK", "neighbourhood", "touches"]
