"""Pairs of rows whose cosine similarity reaches a threshold, without scoring all n² pairs.

Small inputs are compared exactly in row blocks. Larger ones use an inverted-file index: k-means
cells (about ``cell_size`` rows each), every row filed under its ``probes`` nearest cells, and
rows compared only with rows sharing a cell. Rows are L2-normalised, so dot product = cosine.
Candidate pairs can be re-scored by ``rescore`` (e.g. exact TF-IDF cosine after an SVD sketch).
The rows may be a matrix or ``HeldRows`` (vectors held by an embedding cache, normalised as
they are read): the IVF search then reads them a block at a time, the same pairs either way.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cortexgraph.agents.held_rows import HeldRows

Rescore = Callable[[np.ndarray, np.ndarray], np.ndarray]
Rows = np.ndarray | HeldRows  # L2-normalised rows: a matrix, or vectors normalised as read
# Similarities computed as one n x n product up to this many (32 MB of float32), else in
# row blocks.
WHOLE_PRODUCT = 8_000_000


@dataclass(frozen=True, slots=True)
class NeighbourPairs:
    """Upper-triangle pairs (i < j) with their similarity; ``method`` says how they were found."""

    i: np.ndarray
    j: np.ndarray
    sim: np.ndarray
    method: str
    compared: int  # similarities computed, to show the work saved against n²

    def __len__(self) -> int:
        return len(self.i)


def radius_pairs(
    matrix: Rows,
    threshold: float,
    *,
    exact_limit: int = 6000,
    cell_size: int = 150,
    probes: int = 3,
    rescore: Rescore | None = None,
    seed: int = 0,
    max_per_row: int | None = None,
    ranked_from: float | None = None,
) -> NeighbourPairs:
    """Pairs at or above ``threshold``; with ``max_per_row``, only each row's strongest ones
    (a pair stays if it is among the ``max_per_row`` best of either of its rows).

    ``ranked_from`` (at most ``threshold``): the pairs at ``threshold`` of those the search
    at this lower bar keeps, without gathering the ones below ``threshold``. A row's
    ``max_per_row`` strongest at the lower bar that reach ``threshold`` are its strongest at
    ``threshold``, except where a tie straddles its cut: then which tied entries stay depends
    on the whole row, so that row is ranked at the lower bar (``_strongest_entries``)."""
    n = matrix.shape[0]
    if n < 2:
        empty = np.zeros(0, dtype=np.int64)
        return NeighbourPairs(empty, empty, np.zeros(0, dtype=np.float32), "exact", 0)
    k = None if rescore is not None else max_per_row  # re-scored pairs are ranked after
    # Held rows are read as a matrix by the exact search (up to exact_limit rows).
    x: Rows = matrix if isinstance(matrix, HeldRows) else np.ascontiguousarray(matrix, np.float32)
    bar = threshold if rescore is None else threshold * 0.8
    if n <= exact_limit:
        i, j, s, compared = _exact(x[:], bar, k, ranked_from=ranked_from)
        method = "exact"
    else:
        i, j, s, compared = _ivf(x, bar, cell_size, probes, seed, k, ranked_from)
        method = f"ivf(cells≈{cell_size}, probes={probes})"
    if rescore is not None and len(i):
        s = rescore(i, j).astype(np.float32)
    keep = s >= threshold
    return NeighbourPairs(i[keep], j[keep], s[keep], method, compared)


def _row_entries(
    sims: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    threshold: float,
    k: int | None,
    ranked_from: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, sim) of the entries >= threshold, at most ``k`` per row (ranked at
    ``ranked_from``: radius_pairs), self pairs left out, row by row (columns ascending in
    a row). Only the entries at the bar are gathered (~1/20 of a row here); the cut works
    on them."""
    flat = np.flatnonzero(sims >= threshold)  # row by row: a pair found by both its rows
    r = flat // sims.shape[1]  # keeps its lower's sim
    c = flat - r * sims.shape[1]
    other = rows[r] != cols[c]
    r, c = r[other], c[other]
    s = np.take(sims, flat[other])  # sims[r, c], a sixth of the time
    if k is not None and sims.shape[1] > k:
        below = None
        if ranked_from is not None and ranked_from < threshold:
            below = (ranked_from, rows, cols)
        keep = _strongest_entries(sims, r, c, s, k, below)
        r, c, s = r[keep], c[keep], s[keep]
    return rows[r], cols[c], s


def strongest_in_rows(sims: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """``mask`` cut to each row's ``k`` strongest entries: the entries ``np.argpartition``
    of the row (the masked-out ones at -inf) puts first (``_strongest_entries``)."""
    r, c = _entries(mask)
    keep = _strongest_entries(sims, r, c, sims[r, c], k)
    out = np.zeros_like(mask)
    out[r[keep], c[keep]] = True
    return out


def _strongest_entries(
    sims: np.ndarray,
    r: np.ndarray,
    c: np.ndarray,
    s: np.ndarray,
    k: int,
    below: tuple[float, np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Which of the entries (rows ``r`` ascending, columns ``c`` ascending in a row, values
    ``s`` = ``sims[r, c]``) are among their row's ``k`` strongest: the ones a whole row's
    ``np.argpartition`` (the row's other entries at -inf) puts first.

    A row with ``k`` or fewer entries keeps them all. For the others, the k-th and (k+1)-th
    strongest values are read from a narrow matrix of the row's entries; where they differ,
    the k strongest are those at the k-th value or above, whatever partitions them. Where
    they are equal (a tie across the cut), which of the tied entries is kept depends on how
    the row is partitioned, so that row is partitioned whole, as before. Partitioning every
    row whole, then cutting a dense mask, was most of the candidate search (~50 ms of a
    2,142-row incremental cluster step).

    ``below`` (bar, rows, cols): the entries are those at a higher bar of the ones ranked;
    a tied row is ranked with every entry of its row at this bar but its own column."""
    n_rows = sims.shape[0]
    counts = np.bincount(r, minlength=n_rows)
    keep = np.ones(len(r), dtype=bool)
    over = np.flatnonzero(counts > k)
    if not len(over):
        return keep
    starts = np.cumsum(counts) - counts
    slot = np.full(n_rows, -1, dtype=np.int64)
    slot[over] = np.arange(len(over))
    at = np.flatnonzero(slot[r] >= 0)  # the entries of rows over the cap
    row_slot = slot[r[at]]
    values = np.full((len(over), int(counts[over].max())), -np.inf, dtype=s.dtype)
    values[row_slot, at - starts[r[at]]] = s[at]
    strongest = -np.partition(-values, (k - 1, k), axis=1)
    kth, next_ = strongest[:, k - 1], strongest[:, k]
    keep[at] = s[at] >= kth[row_slot]
    for row in over[next_ == kth].tolist():
        first, stop = starts[row], starts[row] + counts[row]
        if below is None:
            masked = np.full(sims.shape[1], -np.inf, dtype=s.dtype)
            masked[c[first:stop]] = s[first:stop]
        else:
            bar, rows, cols = below
            line = sims[row]
            masked = np.where((line >= bar) & (cols != rows[row]), line, -np.inf).astype(s.dtype)
        kept = np.zeros(sims.shape[1], dtype=bool)
        kept[np.argpartition(-masked, k - 1)[:k]] = True
        keep[first:stop] = kept[c[first:stop]]
    return keep


def _entries(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.nonzero`` of a 2-D mask (row by row, columns ascending), through the flat
    positions: a third of the time on a 1,024 x 2,142 mask."""
    flat = np.flatnonzero(mask)
    rows = flat // mask.shape[1]
    return rows, flat - rows * mask.shape[1]


def _dedupe(
    lo: np.ndarray, hi: np.ndarray, sim: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    keys = lo.astype(np.int64) * n + hi
    uniq, first = np.unique(keys, return_index=True)
    return uniq // n, uniq % n, sim[first].astype(np.float32)


def _dedupe_rows(
    row: np.ndarray, col: np.ndarray, sim: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_dedupe`` of entries given row by row, columns ascending in a row (the exact
    search's): the same pairs, order and similarities without sorting every key (3 ms of
    the 2,142-row search at 10k +100). The entries above the diagonal are in key order
    already; those below are put in it by a stable sort of their columns (small integers:
    a radix sort). A pair found by both its rows keeps its lower row's entry, the first."""
    upper = col > row
    low_row, low_col = row[~upper], col[~upper]
    small = np.int16 if n <= np.iinfo(np.int16).max else np.int64
    order = np.argsort(low_col.astype(small), kind="stable")
    keys = np.concatenate(
        [
            row[upper].astype(np.int64) * n + col[upper],
            low_col[order].astype(np.int64) * n + low_row[order],
        ]
    )
    sims = np.concatenate([sim[upper], sim[~upper][order]])
    # Two runs in key order: a stable sort merges them; the upper entry of a key first.
    merged = np.argsort(keys, kind="stable")
    keys, sims = keys[merged], sims[merged]
    first = np.ones(len(keys), dtype=bool)
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    keys = keys[first]
    return keys // n, keys % n, sims[first].astype(np.float32)


def _exact(
    x: np.ndarray,
    threshold: float,
    k: int | None = None,
    block: int = 1024,
    ranked_from: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    n = x.shape[0]
    if n * n <= WHOLE_PRODUCT:
        # One product of the rows with themselves: BLAS computes a symmetric one's upper
        # half and mirrors it (syrk), half the work of its row blocks, the same values.
        block = n
    out_i, out_j, out_s = [], [], []
    everyone = np.arange(n)
    for start in range(0, n, block):
        stop = min(n, start + block)
        if k is None:  # only columns >= start, then only the upper triangle
            sims = x[start:stop] @ x[start:].T
            rows, cols = np.nonzero(sims >= threshold)
            keep = cols + start > rows + start
            lo, hi = rows[keep] + start, cols[keep] + start
            s = sims[rows[keep], cols[keep]]
        else:  # a row's strongest partners may sit on either side of the diagonal
            lo, hi, s = _row_entries(
                x[start:stop] @ x.T, everyone[start:stop], everyone, threshold, k, ranked_from
            )
        out_i.append(lo)
        out_j.append(hi)
        out_s.append(s)
    compared = n * (n - 1) // 2
    i, j, s = np.concatenate(out_i), np.concatenate(out_j), np.concatenate(out_s)
    if k is not None:  # (i, j): each entry's row and column
        return (*_dedupe_rows(i, j, s, n), compared)
    return i.astype(np.int64), j.astype(np.int64), s.astype(np.float32), compared


def _kmeans_centroids(x: Rows, k: int, seed: int, iters: int = 8) -> np.ndarray:
    """Spherical k-means on a sample: enough to partition space, cheap at 100k+ rows. The
    sample is a list of row numbers, its rows read from ``x`` a block at a time: a copy of
    it was 15 MB more at the consolidation run's peak at 10k memories (the same centroids)."""
    rng = np.random.default_rng(seed)
    sample = rng.choice(x.shape[0], size=min(x.shape[0], max(20 * k, 10_000)), replace=False)
    centroids: np.ndarray = x[sample[rng.choice(sample.shape[0], size=k, replace=False)]]
    for _ in range(iters):
        assign = _nearest(x, sample, centroids)
        sums = _cell_sums(x, sample, assign, k)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        empty = norms[:, 0] == 0
        sums[~empty] /= norms[~empty]
        sums[empty] = centroids[empty]
        centroids = sums
    return centroids


def _nearest(x: Rows, rows: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """The nearest centroid of each of ``x[rows]``, a block of rows at a time (a row's dot
    products do not depend on the rows beside it)."""
    out = np.empty(len(rows), dtype=np.int64)
    for start in range(0, len(rows), 1024):
        block = x[rows[start : start + 1024]]
        out[start : start + len(block)] = np.argmax(block @ centroids.T, axis=1)
    return out


def _cell_sums(x: Rows, rows: np.ndarray, assign: np.ndarray, k: int) -> np.ndarray:
    """Per cell, the sum of its rows (``x[rows]``, cell by ``assign``): bit for bit
    ``np.add.at(zeros, assign, x[rows])``, whose float32 additions run row by row in row
    order, as ``np.add.accumulate`` runs them over each cell's rows in a stable sort (+ 0.0:
    add.at starts from +0.0, never yields -0.0). add.at took its slow per-element path here,
    ~30 ms a call on 10k x 384, 8 calls a run. Each cell's rows are gathered on their own:
    a sorted copy of the whole sample was 15 MB more at the consolidation run's peak at 10k
    memories."""
    order = np.argsort(assign, kind="stable")
    bounds = np.searchsorted(assign[order], np.arange(k + 1))
    sums = np.zeros((k, x.shape[1]), dtype=x.dtype)
    for c in range(k):
        if bounds[c] < bounds[c + 1]:
            cell = x[rows[order[bounds[c] : bounds[c + 1]]]]
            sums[c] = np.add.accumulate(cell, axis=0)[-1] + 0.0
    return sums


def _ivf(
    x: Rows,
    threshold: float,
    cell_size: int,
    probes: int,
    seed: int,
    per_row: int | None = None,
    ranked_from: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    n = x.shape[0]
    k = max(2, min(4096, math.ceil(n / cell_size)))
    probes = min(probes, k)
    centroids = _kmeans_centroids(x, k, seed)
    cells: list[list[np.ndarray]] = [[] for _ in range(k)]
    # Held rows are gathered to be read: 1024 at a time (a row's products do not depend on the
    # rows beside it); a matrix's slices are views.
    step = 1024 if isinstance(x, HeldRows) else 8192
    for start in range(0, n, step):
        block = x[start : start + step] @ centroids.T
        top = np.argpartition(-block, probes - 1, axis=1)[:, :probes]
        rows = np.repeat(np.arange(start, start + block.shape[0]), probes)
        order = np.argsort(top.ravel(), kind="stable")
        cell_ids = top.ravel()[order]
        bounds = np.searchsorted(cell_ids, np.arange(k + 1))
        for c in range(k):
            if bounds[c] < bounds[c + 1]:
                cells[c].append(rows[order[bounds[c] : bounds[c + 1]]])
    los: list[np.ndarray] = []
    his: list[np.ndarray] = []
    sims: list[np.ndarray] = []
    compared = 0
    for parts in cells:
        if not parts:
            continue
        members = np.concatenate(parts)
        if len(members) < 2:
            continue
        members.sort()
        sub = x[members]
        compared += len(members) * (len(members) - 1) // 2
        gi, gj, s = _row_entries(sub @ sub.T, members, members, threshold, per_row, ranked_from)
        lo, hi = np.minimum(gi, gj), np.maximum(gi, gj)
        los.append(lo)
        his.append(hi)
        sims.append(s)
    if not los:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32), compared
    return (*_dedupe(np.concatenate(los), np.concatenate(his), np.concatenate(sims), n), compared)


__all__ = ["NeighbourPairs", "radius_pairs"]
