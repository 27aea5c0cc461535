"""How the cluster detector groups linked memories: capped single linkage and cohesion.

Pure numpy over pair arrays and similarity matrices; ``agents.cluster_detector`` decides what
each group is (merge, review, keep) and tracks it.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations

import numpy as np

from cortexgraph.agents.vectors import TextVectors


def similarity_matrix(vectors: TextVectors, members: list[int]) -> np.ndarray:
    a, b = zip(*combinations(range(len(members)), 2), strict=True)
    m = np.array(members)
    sims = np.eye(len(members), dtype=np.float64)
    pair = vectors.pair_similarity(m[list(a)], m[list(b)])
    sims[list(a), list(b)] = pair
    sims[list(b), list(a)] = pair
    return sims


def cohesion_of(sims: np.ndarray) -> float:
    n = sims.shape[0]
    return float((sims.sum() - np.trace(sims)) / (n * (n - 1))) if n > 1 else 1.0


def merge_core(sims: np.ndarray, bar: float) -> list[int] | None:
    """The members left after dropping, one at a time, the one least like the rest, until the
    cohesion reaches ``bar``; None when no core of two or more gets there (or none is needed).

    Single linkage can hang a loosely related memory on a tight pair; without trimming the
    pair is only reviewed this run and merged on a later one, once the stray has moved on.
    """
    keep = list(range(sims.shape[0]))
    if cohesion_of(sims) >= bar:
        return None
    while len(keep) > 2:
        sub = sims[np.ix_(keep, keep)]
        worst = int(np.argmin(sub.sum(axis=1)))
        keep.pop(worst)
        if cohesion_of(sims[np.ix_(keep, keep)]) >= bar:
            return keep
    return None


def strongest_per_row(
    i: np.ndarray, j: np.ndarray, sim: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep a pair only if it is among the ``k`` strongest of one of its two members.

    The detector uses k = 2 × ``max_cluster_size``: a cluster never holds more members than
    that cap, so a memory's weaker links seldom decide anything, and dropping them bounds the
    neighbour search's output and the union-find work to n·k pairs at a low link threshold
    (100k synthetic memories: 28M pairs above 0.65 otherwise).
    """
    if len(i) <= k:
        return i, j, sim
    ends = np.concatenate([i, j])
    pair = np.concatenate([np.arange(len(i)), np.arange(len(i))])
    order = np.lexsort((-np.concatenate([sim, sim]), ends))
    ends, pair = ends[order], pair[order]
    starts = np.searchsorted(ends, ends, side="left")
    rank = np.arange(len(ends)) - starts
    keep = np.zeros(len(i), dtype=bool)
    keep[pair[rank < k]] = True
    return i[keep], j[keep], sim[keep]


class CappedUnionFind:
    """Union-find whose sets stop at ``cap`` members and never join two conflicting members."""

    def __init__(self, n: int, cap: int, conflicts: Callable[[int, int], bool] | None = None):
        self.parent = list(range(n))
        self.size = [1] * n
        self.members: dict[int, list[int]] = {}
        self.cap = cap
        self.conflicts = conflicts
        self.refused = 0  # joins refused because some cross pair conflicts

    def find(self, a: int) -> int:
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb or self.size[ra] + self.size[rb] > self.cap:
            return
        if self.conflicts is not None:
            left, right = self.members.get(ra, [ra]), self.members.get(rb, [rb])
            if any(self.conflicts(x, y) for x in left for y in right):
                self.refused += 1
                return
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        self.members[ra] = self.members.pop(ra, [ra]) + self.members.pop(rb, [rb])


__all__ = ["CappedUnionFind", "cohesion_of", "merge_core", "similarity_matrix", "strongest_per_row"]
