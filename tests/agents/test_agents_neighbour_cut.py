"""Each row's strongest candidates (agents.neighbours.strongest_in_rows): the entries a whole
row's ``np.argpartition`` keeps, ties across the cut included, without partitioning every
row whole."""

from __future__ import annotations

import numpy as np
import pytest

from cortexgraph.agents.neighbours import strongest_in_rows


def _whole_rows(sims: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """The former cut: every row partitioned whole, the masked-out entries at -inf."""
    masked = np.where(mask, sims, -np.inf)
    top = np.argpartition(-masked, k - 1, axis=1)[:, :k]
    out = np.zeros_like(mask)
    rows = np.repeat(np.arange(len(sims)), k)
    keep = np.isfinite(masked[rows, top.ravel()])
    out[rows[keep], top.ravel()[keep]] = True
    return out


@pytest.mark.parametrize("seed", range(6))
def test_each_rows_cut_is_the_whole_row_partitions_ties_included(seed):
    rng = np.random.default_rng(seed)
    n, k = 300, 7
    # Coarse values: many rows hold several entries equal to their k-th strongest.
    sims = np.round(rng.uniform(0.0, 1.0, (n, n)), 1).astype(np.float32)
    mask = sims >= 0.3
    mask[rng.random(n) < 0.3] &= rng.random(n) < 0.02  # some rows with k or fewer entries
    counts = mask.sum(axis=1)
    kth = -np.sort(-np.where(mask, sims, -np.inf), axis=1)[:, k - 1 : k + 1]
    assert (counts <= k).any() and ((counts > k) & (kth[:, 0] == kth[:, 1])).any()
    assert np.array_equal(strongest_in_rows(sims, mask, k), _whole_rows(sims, mask, k))
