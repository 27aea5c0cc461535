"""Pairs of rows whose cosine similarity reaches a threshold, without scoring all n² pairs.

Small inputs are compared exactly in row blocks. Larger ones use an inverted-file index: k-means
cells (about ``cell_size`` rows each), every row filed under its ``probes`` nearest cells, and
rows compared only with rows sharing a cell. Rows are L2-normalised, so dot product = cosine.
Candidate pairs can be re-scored by ``rescore`` (e.g. exact TF-IDF cosine after an SVD sketch).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Rescore = Callable[[np.ndarray, np.ndarray], np.ndarray]


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
    matrix: np.ndarray,
    threshold: float,
    *,
    exact_limit: int = 6000,
    cell_size: int = 150,
    probes: int = 3,
    rescore: Rescore | None = None,
    seed: int = 0,
) -> NeighbourPairs:
    n = matrix.shape[0]
    if n < 2:
        empty = np.zeros(0, dtype=np.int64)
        return NeighbourPairs(empty, empty, np.zeros(0, dtype=np.float32), "exact", 0)
    x = np.ascontiguousarray(matrix, dtype=np.float32)
    if n <= exact_limit:
        i, j, s, compared = _exact(x, threshold if rescore is None else threshold * 0.8)
        method = "exact"
    else:
        i, j, s, compared = _ivf(x, threshold if rescore is None else threshold * 0.8,
                                 cell_size, probes, seed)  # fmt: skip
        method = f"ivf(cells≈{cell_size}, probes={probes})"
    if rescore is not None and len(i):
        s = rescore(i, j).astype(np.float32)
    keep = s >= threshold
    return NeighbourPairs(i[keep], j[keep], s[keep], method, compared)


def _exact(x: np.ndarray, threshold: float, block: int = 1024):
    n = x.shape[0]
    out_i, out_j, out_s = [], [], []
    for start in range(0, n, block):
        stop = min(n, start + block)
        sims = x[start:stop] @ x[start:].T  # only columns >= start: the upper triangle
        rows, cols = np.nonzero(sims >= threshold)
        cols_abs = cols + start
        rows_abs = rows + start
        keep = cols_abs > rows_abs
        out_i.append(rows_abs[keep])
        out_j.append(cols_abs[keep])
        out_s.append(sims[rows[keep], cols[keep]])
    compared = n * (n - 1) // 2
    return (np.concatenate(out_i).astype(np.int64), np.concatenate(out_j).astype(np.int64),
            np.concatenate(out_s).astype(np.float32), compared)  # fmt: skip


def _kmeans_centroids(x: np.ndarray, k: int, seed: int, iters: int = 8) -> np.ndarray:
    """Spherical k-means on a sample: enough to partition space, cheap at 100k+ rows."""
    rng = np.random.default_rng(seed)
    sample = x[rng.choice(x.shape[0], size=min(x.shape[0], max(20 * k, 10_000)), replace=False)]
    centroids = sample[rng.choice(sample.shape[0], size=k, replace=False)].copy()
    for _ in range(iters):
        assign = np.argmax(sample @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, sample)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        empty = norms[:, 0] == 0
        sums[~empty] /= norms[~empty]
        sums[empty] = centroids[empty]
        centroids = sums
    return centroids


def _ivf(x: np.ndarray, threshold: float, cell_size: int, probes: int, seed: int):
    n = x.shape[0]
    k = max(2, min(4096, math.ceil(n / cell_size)))
    probes = min(probes, k)
    centroids = _kmeans_centroids(x, k, seed)
    cells: list[list[np.ndarray]] = [[] for _ in range(k)]
    for start in range(0, n, 8192):
        block = x[start : start + 8192] @ centroids.T
        top = np.argpartition(-block, probes - 1, axis=1)[:, :probes]
        rows = np.repeat(np.arange(start, start + block.shape[0]), probes)
        order = np.argsort(top.ravel(), kind="stable")
        cell_ids = top.ravel()[order]
        bounds = np.searchsorted(cell_ids, np.arange(k + 1))
        for c in range(k):
            if bounds[c] < bounds[c + 1]:
                cells[c].append(rows[order[bounds[c] : bounds[c + 1]]])
    keys: list[np.ndarray] = []
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
        s = sub @ sub.T
        compared += len(members) * (len(members) - 1) // 2
        r, c = np.nonzero(np.triu(s >= threshold, k=1))
        keys.append(members[r] * n + members[c])
        sims.append(s[r, c])
    if not keys:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32), compared
    all_keys = np.concatenate(keys)
    all_sims = np.concatenate(sims)
    uniq, first = np.unique(all_keys, return_index=True)
    return uniq // n, uniq % n, all_sims[first].astype(np.float32), compared


__all__ = ["NeighbourPairs", "radius_pairs"]
