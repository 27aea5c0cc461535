"""ClusterDetector: groups near-duplicate and closely related memories.

Similarity is the cosine of sentence embeddings (TF-IDF when no model is available; the report
says which). Candidate pairs come from a neighbour search (agents.neighbours), never all n²
pairs. Clusters grow by single linkage over pairs above the link threshold, strongest first,
and stop at ``max_cluster_size``; cohesion is the mean pairwise similarity inside a cluster and
decides the action: merge (>= 0.85), review (>= 0.65) or keep. Merge and review clusters become
tracked issues that SemanticMerge (or a person) consumes.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, replace
from enum import StrEnum
from itertools import combinations

import numpy as np

from agents.common import LABEL_CLUSTER, ReportTable, short, snippet
from agents.protocols import Embedder, IssueTracker
from agents.vectors import TextVectors, vectorize
from storage.base import MemoryStore
from storage.errors import InvalidInputError
from storage.models import Memory, MemoryStatus

log = logging.getLogger(__name__)


class ClusterAction(StrEnum):
    MERGE = "merge"
    REVIEW = "review"
    KEEP = "keep"


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    link_threshold: float = 0.83  # embeddings cosine
    # TF-IDF is lexical: paraphrases score far lower (0.1-0.5 on the demo set), so its bar and
    # its merge/review cohesions are lower, and tuned to stay precise rather than complete.
    tfidf_link_threshold: float = 0.35
    tfidf_merge_cohesion: float = 0.6
    tfidf_review_cohesion: float = 0.35
    max_cluster_size: int = 12
    merge_cohesion: float = 0.85
    review_cohesion: float = 0.65
    open_issues: bool = True
    exact_limit: int = 6000  # above this many memories, an inverted-file index finds pairs

    def __post_init__(self) -> None:
        if not 0.0 <= self.review_cohesion <= self.merge_cohesion <= 1.0:
            raise InvalidInputError("need 0 <= review_cohesion <= merge_cohesion <= 1")
        if self.max_cluster_size < 2:
            raise InvalidInputError("max_cluster_size must be at least 2")


@dataclass(frozen=True, slots=True)
class Cluster:
    cluster_id: str  # stable: a hash of the sorted member ids
    memory_ids: tuple[str, ...]
    cohesion: float
    action: ClusterAction
    previews: tuple[str, ...] = ()
    issue_id: str | None = None

    @property
    def size(self) -> int:
        return len(self.memory_ids)


@dataclass(frozen=True, slots=True)
class ClusterReport:
    dry_run: bool
    scanned: int
    method: str  # "embeddings:<model>" or "tfidf"
    neighbour_method: str
    link_threshold: float
    candidate_pairs: int
    compared_pairs: int
    clusters: tuple[Cluster, ...]
    issues_opened: int

    def count(self, action: ClusterAction) -> int:
        return sum(c.action is action for c in self.clusters)

    def table(self) -> ReportTable:
        return ReportTable(
            title="Clusters",
            summary=(
                f"{self.scanned} memories, similarity by {self.method} "
                f"(link >= {self.link_threshold}), pairs via {self.neighbour_method}: "
                f"{self.compared_pairs:,} compared, {self.candidate_pairs:,} linked; "
                f"merge {self.count(ClusterAction.MERGE)}, review "
                f"{self.count(ClusterAction.REVIEW)}, keep {self.count(ClusterAction.KEEP)}; "
                f"{self.issues_opened} issue(s)"
            ),
            columns=("cluster", "size", "cohesion", "action", "issue", "first memory"),
            rows=tuple(
                (
                    c.cluster_id,
                    str(c.size),
                    f"{c.cohesion:.3f}",
                    c.action.value,
                    c.issue_id or "",
                    c.previews[0] if c.previews else "",
                )
                for c in self.clusters
            ),  # fmt: skip
        )


def cluster_id_for(memory_ids: tuple[str, ...]) -> str:
    return "c-" + hashlib.blake2b("|".join(sorted(memory_ids)).encode(), digest_size=5).hexdigest()


class _CappedUnionFind:
    def __init__(self, n: int, cap: int) -> None:
        self.parent = list(range(n))
        self.size = [1] * n
        self.cap = cap

    def find(self, a: int) -> int:
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb or self.size[ra] + self.size[rb] > self.cap:
            return
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]


class ClusterDetector:
    name = "cluster"

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder | None = None,
        tracker: IssueTracker | None = None,
        config: ClusterConfig | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.tracker = tracker
        self.config = config or ClusterConfig()

    def action_for(self, cohesion: float, semantic: bool = True) -> ClusterAction:
        cfg = self.config
        merge = cfg.merge_cohesion if semantic else cfg.tfidf_merge_cohesion
        review = cfg.review_cohesion if semantic else cfg.tfidf_review_cohesion
        if cohesion >= merge:
            return ClusterAction.MERGE
        if cohesion >= review:
            return ClusterAction.REVIEW
        return ClusterAction.KEEP

    def run(self, *, now: float, dry_run: bool = False) -> ClusterReport:
        cfg = self.config
        memories = sorted(self.store.list(status=MemoryStatus.ACTIVE), key=lambda m: m.id)
        vectors = vectorize([m.content for m in memories], self.embedder)
        threshold = cfg.link_threshold if vectors.is_semantic else cfg.tfidf_link_threshold
        pairs = vectors.neighbours(threshold, exact_limit=cfg.exact_limit)
        clusters = self._group(memories, vectors, pairs.i, pairs.j, pairs.sim)
        opened = 0
        if self.tracker is not None and cfg.open_issues and not dry_run:
            clusters = [
                self._open_issue(c, vectors.method) if c.action is not ClusterAction.KEEP else c
                for c in clusters
            ]
            opened = sum(c.issue_id is not None for c in clusters)
        log.info(
            "cluster: %d memories by %s via %s, %d pairs, %d clusters, %d issues%s",
            len(memories), vectors.method, pairs.method, len(pairs), len(clusters), opened,
            " (dry run)" if dry_run else "",
        )  # fmt: skip
        return ClusterReport(
            dry_run=dry_run,
            scanned=len(memories),
            method=vectors.method,
            neighbour_method=pairs.method,
            link_threshold=threshold,
            candidate_pairs=len(pairs),
            compared_pairs=pairs.compared,
            clusters=tuple(clusters),
            issues_opened=opened,
        )

    def _group(
        self,
        memories: list[Memory],
        vectors: TextVectors,
        pi: np.ndarray,
        pj: np.ndarray,
        ps: np.ndarray,
    ) -> list[Cluster]:
        uf = _CappedUnionFind(len(memories), self.config.max_cluster_size)
        for k in np.argsort(-ps, kind="stable"):
            uf.union(int(pi[k]), int(pj[k]))
        groups: dict[int, list[int]] = {}
        for idx in {int(x) for x in np.concatenate([pi, pj])}:
            groups.setdefault(uf.find(idx), []).append(idx)
        clusters = []
        for members in groups.values():
            if len(members) < 2:
                continue
            members.sort()
            a, b = zip(*combinations(members, 2), strict=True)
            cohesion = float(np.mean(vectors.pair_similarity(np.array(a), np.array(b))))
            ids = tuple(memories[i].id for i in members)
            clusters.append(
                Cluster(
                    cluster_id=cluster_id_for(ids),
                    memory_ids=ids,
                    cohesion=min(1.0, cohesion),
                    action=self.action_for(cohesion, vectors.is_semantic),
                    previews=tuple(snippet(memories[i].content) for i in members),
                )
            )
        clusters.sort(key=lambda c: (-c.cohesion, c.cluster_id))
        return clusters

    def _open_issue(self, cluster: Cluster, method: str) -> Cluster:
        assert self.tracker is not None
        verb = "Merge" if cluster.action is ClusterAction.MERGE else "Review"
        listing = "\n".join(
            f"- {short(mid)}: {p}" for mid, p in zip(cluster.memory_ids, cluster.previews,
                                                      strict=True)
        )  # fmt: skip
        issue = self.tracker.create(
            f"{verb} {cluster.size} similar memories (cohesion {cluster.cohesion:.2f})",
            description=f"Similarity by {method}.\n\n{listing}",
            labels=(LABEL_CLUSTER, f"action:{cluster.action.value}"),
            priority=2 if cluster.action is ClusterAction.MERGE else 3,
            metadata={
                "cluster_id": cluster.cluster_id,
                "memory_ids": list(cluster.memory_ids),
                "cohesion": round(cluster.cohesion, 4),
                "action": cluster.action.value,
                "method": method,
            },
            dedupe_key=f"cluster:{cluster.cluster_id}",
        )
        return replace(cluster, issue_id=issue.id)


__all__ = ["Cluster", "ClusterAction", "ClusterConfig", "ClusterDetector", "ClusterReport",
           "cluster_id_for"]  # fmt: skip
