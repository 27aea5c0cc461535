"""How the cluster detector groups linked memories: capped complete linkage, cohesion, and
what each group is (merge, review, keep).

Pure Python and numpy over pair arrays; ``agents.cluster_detector`` decides which pairs may
link (the detail and restatement guards) and hands them here strongest first.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from itertools import combinations

import numpy as np

from cortexgraph.agents.cluster_report import Cluster, ClusterAction, ClusterConfig, cluster_id_for
from cortexgraph.agents.common import snippet
from cortexgraph.storage.models import Memory

Pair = tuple[int, int]


def group_clusters(
    memories: Sequence[Memory],
    allowed: Sequence[tuple[int, int, float]],
    spoken: Sequence[bool],
    bars: tuple[float, float, float],
    cfg: ClusterConfig,
    same_numbers: Callable[[int, int], bool],
) -> list[Cluster]:
    """Complete-linkage clusters in two passes: merges, then the rest (reviews, keeps).

    ``allowed``: the pairs the guards let link (rows of ``memories``), strongest first;
    ``spoken``: each memory is a transcript line; ``bars``: (merge, review, link);
    ``same_numbers``: the two memories state the same numbers."""
    merge_bar, review_bar, link_bar = bars
    sim = {(i, j): s for i, j, s in allowed}
    order = [(i, j) for i, j, _ in allowed]
    # A merge: every pair linked, their mean at the merge bar; two transcript lines only
    # at the (higher) transcript bar: small talk repeats itself in other words.
    spoken_bar = max(merge_bar, cfg.transcript_merge_cohesion)
    both_spoken = {p for p in order if spoken[p[0]] and spoken[p[1]]}
    floor = {p: spoken_bar if p in both_spoken else link_bar for p in order}
    # Two notes stating the same numbers count as at the merge bar (ClusterConfig).
    merge_sim = dict(sim)
    if cfg.same_numbers_merge:
        for p in order:
            if p not in both_spoken and sim[p] < merge_bar and same_numbers(*p):
                merge_sim[p] = merge_bar
    taken: set[int] = set()
    clusters: list[Cluster] = []
    merge_cap = min(cfg.max_merge_size, cfg.max_cluster_size)
    for merging in (True, False):
        # The rest: every pair at the link bar; reviewed when cohesive enough.
        linked = {
            p
            for p in order
            if p[0] not in taken
            and p[1] not in taken
            and sim[p] >= (floor[p] if merging else link_bar)
        }
        kept = [p for p in order if p in linked]
        cap, mean_bar = (merge_cap, merge_bar) if merging else (cfg.max_cluster_size, 0.0)
        by = merge_sim if merging else sim
        for members in complete_link_groups(kept, linked, by, cap, mean_bar):
            taken.update(members)
            if len(members) < cfg.min_cluster_size:
                continue
            cohesion = min(1.0, pair_cohesion(members, sim))
            action = ClusterAction.MERGE
            if not merging:
                action = ClusterAction.REVIEW if cohesion >= review_bar else ClusterAction.KEEP
            ids = tuple(memories[i].id for i in members)
            clusters.append(
                Cluster(
                    cluster_id=cluster_id_for(ids),
                    memory_ids=ids,
                    cohesion=cohesion,
                    action=action,
                    previews=tuple(snippet(memories[i].content) for i in members),
                )
            )
    clusters.sort(key=lambda c: (-c.cohesion, c.cluster_id))
    return clusters


def complete_link_groups(
    order: Sequence[Pair],
    linked: Container[Pair],
    sim: Mapping[Pair, float],
    cap: int,
    mean_bar: float = 0.0,
) -> list[list[int]]:
    """Groups of at least two in which every two members are ``linked`` and the mean
    similarity of their pairs reaches ``mean_bar``.

    ``order``: the linked pairs (i < j), strongest first. Groups grow pair by pair, up to
    ``cap`` members; two groups join only when every cross pair is linked (complete linkage:
    a memory never joins through a third it is unlike; single linkage chained one topic's
    turns into ten-memory blobs) and the joined group's mean stays at ``mean_bar`` or more.
    """
    group: dict[int, list[int]] = {}  # member -> its group's member list (shared)
    inner: dict[int, float] = {}  # id(group list) -> sum of its pairs' similarities
    for i, j in order:
        a, b = group.get(i, [i]), group.get(j, [j])
        if a is b or len(a) + len(b) > cap:
            continue
        cross = 0.0
        for x in a:
            for y in b:
                key = (x, y) if x < y else (y, x)
                if key not in linked:
                    break
                cross += sim[key]
            else:
                continue
            break
        else:
            total = inner.get(id(a), 0.0) + inner.get(id(b), 0.0) + cross
            size = len(a) + len(b)
            if total / (size * (size - 1) / 2) < mean_bar:
                continue
            inner.pop(id(a), None)
            inner.pop(id(b), None)
            joined = a + b
            inner[id(joined)] = total
            for m in joined:
                group[m] = joined
    seen: dict[int, list[int]] = {id(g): g for g in group.values()}
    return sorted((sorted(g) for g in seen.values()), key=lambda g: g[0])


def pair_cohesion(members: Sequence[int], sim: Mapping[Pair, float]) -> float:
    """Mean similarity of the members' pairs (each of them in ``sim``)."""
    got = [sim[(a, b)] for a, b in combinations(sorted(members), 2)]
    return sum(got) / len(got) if got else 1.0


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
    rank_i, rank_j = row_ranks(i, j, sim)
    keep = (rank_i < k) | (rank_j < k)
    return i[keep], j[keep], sim[keep]


def row_ranks(i: np.ndarray, j: np.ndarray, sim: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's rank among its ``i`` member's pairs and among its ``j`` member's (0: the
    strongest). Ties go by position, a member's pairs as ``i`` before those as ``j``: a
    member's rank depends on its own pairs alone and their order, so the ranks over any
    subset of the pairs that holds all of one member's are that member's ranks over all."""
    ends = np.concatenate([i, j])
    order = np.lexsort((-np.concatenate([sim, sim]), ends))
    starts = np.searchsorted(ends[order], ends[order], side="left")
    rank = np.empty(len(ends), dtype=np.int64)
    rank[order] = np.arange(len(ends)) - starts
    return rank[: len(i)], rank[len(i) :]


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


__all__ = [
    "CappedUnionFind",
    "complete_link_groups",
    "group_clusters",
    "pair_cohesion",
    "row_ranks",
    "strongest_per_row",
]
