"""L2-normalised rows read from vectors held elsewhere, never stacked whole.

The consolidation run's claims are the texts the server's ``EmbeddingCache`` already holds a
vector of. Stacking them for the neighbour search copied every vector once more (15 MB at 10k
memories, at the run's peak, beside the cache's own). ``HeldRows`` keeps the cache's arrays as
they are and normalises only the rows a read gathers: each row bit for bit the row of the
stacked matrix normalised in ``NORM_BLOCK`` blocks (a row's norm and its quotients depend on
that row alone), so the pairs found are the same.

The rows are the holder's own arrays: read here, never written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

NORM_BLOCK = 1024  # rows normalised at once (a row's norm is the same in any block)


def row_norms(vecs: np.ndarray) -> np.ndarray:
    """Each row's L2 norm (n x 1), 1.0 for a zero row."""
    norms: np.ndarray = np.linalg.norm(vecs, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return norms


def stacked_rows(rows: Sequence[np.ndarray]) -> np.ndarray:
    """``np.stack(rows)`` (1-D rows of one length) as float32, the rows copied at C speed:
    ``np.stack`` checks and reshapes each row in Python (~1 us a row; 4,791 rows were 10% of
    an incremental cluster step)."""
    if not rows:
        raise ValueError("need at least one row to stack")
    flat = np.concatenate(rows)
    if flat.ndim != 1 or len(set(map(len, rows))) != 1:
        raise ValueError("rows must be 1-D arrays of one length")
    return flat.reshape(len(rows), -1).astype(np.float32, copy=False)


def distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a 1-D array: its distinct values, sorted. Without unique's
    check for a masked array, which imports numpy.ma (~9 ms) on first use: the cluster
    step was the only one in a consolidation run to ask."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    first = np.empty(len(ordered), dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first]


class HeldRows:
    """A read-only matrix of L2-normalised rows over ``rows`` (1-D float32 arrays, kept as
    given): ``held[index]`` is a new array of the rows ``index`` selects, normalised."""

    dtype = np.dtype(np.float32)

    def __init__(self, rows: Sequence[np.ndarray]) -> None:
        self.rows = list(rows)
        n = len(self.rows)
        self.shape = (n, len(self.rows[0]) if n else 1)
        self._norms: np.ndarray | None = None

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def norms(self) -> np.ndarray:
        """Each row's L2 norm (n x 1, 1.0 for a zero row), read on first use (the exact
        search's read of every row reads them from that very stack: a second stack of
        every row was 2% of an incremental cluster step)."""
        if self._norms is None:
            rows = self.rows
            self._norms = _block_norms(len(rows), lambda a, b: stacked_rows(rows[a:b]))
        return self._norms

    def __getitem__(self, index: slice | np.ndarray) -> np.ndarray:
        n = self.shape[0]
        picked = np.arange(n)[index]
        if not len(picked):
            return np.zeros((0, self.shape[1]), dtype=np.float32)
        rows = self.rows
        every = isinstance(index, slice) and index.indices(n) == (0, n, 1)
        block = stacked_rows(rows if every else [rows[i] for i in picked.tolist()])
        if every and self._norms is None:  # a row's norm is the same in any block
            self._norms = _block_norms(n, lambda a, b: block[a:b])
        np.divide(block, self.norms[picked], out=block)
        return block


def _block_norms(n: int, block: Callable[[int, int], np.ndarray]) -> np.ndarray:
    """The L2 norms (n x 1, 1.0 for a zero row) of rows ``0..n``, ``NORM_BLOCK`` rows at a
    time: ``block(start, stop)`` gives those rows stacked."""
    norms = np.ones((n, 1), dtype=np.float32)
    for start in range(0, n, NORM_BLOCK):
        norms[start : start + NORM_BLOCK] = row_norms(block(start, start + NORM_BLOCK))
    return norms


__all__ = ["NORM_BLOCK", "HeldRows", "distinct", "row_norms", "stacked_rows"]
