"""Each row's strongest candidates (agents.neighbours.strongest_in_rows): the entries a whole
row's ``np.argpartition`` keeps, ties across the cut included, without partitioning every
row whole."""

from __future__ import annotations

import numpy as np
import pytest

from cortexgraph.agents.neighbours import radius_pairs, strongest_in_rows


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


def _tied_rows(rng, n: int) -> np.ndarray:
    """Unit rows of one topic, many of them repeated: a repeated row ties with its copies in
    every other row, so ties straddle the cuts."""
    base = rng.normal(size=(n // 3, 24)).astype(np.float32)
    base += rng.normal(size=(1, 24)).astype(np.float32) * 2.0
    rows = base[rng.integers(0, len(base), n)]
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("seed", [3, 7, 11])
@pytest.mark.parametrize("exact_limit", [10_000, 100])  # the exact search, the inverted file
@pytest.mark.parametrize("k", [3, 6])
def test_ranked_from_keeps_the_lower_bars_pairs_that_reach_the_threshold(seed, exact_limit, k):
    """``ranked_from``: the pairs at the threshold of those a search at the lower bar keeps
    (each row's strongest at the lower bar, tied cuts included), never gathering the rest."""
    x = _tied_rows(np.random.default_rng(seed), 420)
    low, high = 0.5, 0.7
    whole = radius_pairs(x, low, max_per_row=k, exact_limit=exact_limit)
    kept = whole.sim >= high
    part = radius_pairs(x, high, max_per_row=k, exact_limit=exact_limit, ranked_from=low)
    want = [whole.i[kept].tolist(), whole.j[kept].tolist(), whole.sim[kept].tolist()]
    assert len(part) > 100
    assert [part.i.tolist(), part.j.tolist(), part.sim.tolist()] == want
    if seed in (3, 7) and exact_limit > 420:
        # What the lower bar is for: a tied row's choice among its ties depends on its
        # entries below the threshold too; ranked at the threshold alone, it differs here.
        alone = radius_pairs(x, high, max_per_row=k, exact_limit=exact_limit)
        assert [alone.i.tolist(), alone.j.tolist()] != want[:2]
