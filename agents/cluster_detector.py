"""ClusterDetector: groups near-duplicate and closely related memories.

Similarity is the cosine of sentence embeddings (TF-IDF when no model is available; the report
says which). Candidate pairs come from a neighbour search (agents.neighbours), never all n²
pairs; each memory keeps only its ``max_cluster_size`` strongest links. Clusters grow by single
linkage, strongest pairs first, up to ``max_cluster_size``, and two groups never join when any
member of one conflicts with any member of the other: swapped numbers or names mean different
facts (agents.duplicates). Cohesion, the mean pairwise similarity inside a cluster, decides the
action: merge (>= 0.75), review (>= 0.65) or keep. Merge and review clusters become tracked
issues that SemanticMerge (or a person) consumes.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np

from cortexgraph.agents.candidate_pairs import checked_candidates
from cortexgraph.agents.cluster_grouping import (
    CappedUnionFind,
    cohesion_of,
    merge_core,
    similarity_matrix,
    strongest_per_row,
)
from cortexgraph.agents.common import LABEL_CLUSTER, LABEL_MERGE, ReportTable, short, snippet
from cortexgraph.agents.duplicates import DetailExtractor, Details, conflicts
from cortexgraph.agents.merge_ops import PROVENANCE_KEY
from cortexgraph.agents.neighbours import NeighbourPairs
from cortexgraph.agents.protocols import Embedder, IssueTracker
from cortexgraph.agents.vectors import TextVectors, vectorize
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore

log = logging.getLogger(__name__)


class ClusterAction(StrEnum):
    MERGE = "merge"
    REVIEW = "review"
    KEEP = "keep"


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    # Tuned on half of the demo set's labelled groups (the other half held out; see
    # docs/pipeline.md): paraphrases score 0.47-0.9 with MiniLM, so the bar is low and the
    # lexical guards below keep swapped numbers and names apart.
    link_threshold: float = 0.65  # embeddings cosine
    # TF-IDF is lexical: paraphrases score far lower (0.1-0.5 on the demo set), so its bar and
    # its merge/review cohesions are lower, and tuned to stay precise rather than complete.
    tfidf_link_threshold: float = 0.35
    tfidf_merge_cohesion: float = 0.6
    tfidf_review_cohesion: float = 0.35
    max_cluster_size: int = 12
    min_cluster_size: int = 2  # smaller groups are not reported (CORTEXGRAPH_MIN_CLUSTER_SIZE)
    merge_cohesion: float = 0.75
    review_cohesion: float = 0.65
    open_issues: bool = True
    exact_limit: int = 6000  # above this many memories, an inverted-file index finds pairs
    # Memories whose numbers or names are swapped are different facts, however similar the
    # wording (agents.duplicates); they are never linked into one cluster.
    guard_details: bool = True
    names_min_overlap: float = 0.6
    trim_to_core: bool = True  # a loose cluster yields its tight core for merging (see below)
    # With a candidate model (a static model distilled from MiniLM, agents.candidate_pairs):
    # its pairs at this cosine, each memory's strongest candidate_per_row, are checked by MiniLM.
    candidate_threshold: float = 0.5
    candidate_per_row: int = 48

    def __post_init__(self) -> None:
        if not 0.0 <= self.review_cohesion <= self.merge_cohesion <= 1.0:
            raise InvalidInputError("need 0 <= review_cohesion <= merge_cohesion <= 1")
        if self.max_cluster_size < 2:
            raise InvalidInputError("max_cluster_size must be at least 2")
        if not 2 <= self.min_cluster_size <= self.max_cluster_size:
            raise InvalidInputError("need 2 <= min_cluster_size <= max_cluster_size")


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

    @property
    def id(self) -> str:  # 1.x name
        return self.cluster_id

    @property
    def suggested_action(self) -> str:  # 1.x name
        return self.action.value


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
    refused_conflicts: int = 0  # links refused: numbers or names differ (agents.duplicates)

    def count(self, action: ClusterAction) -> int:
        return sum(c.action is action for c in self.clusters)

    def table(self) -> ReportTable:
        return ReportTable(
            title="Clusters",
            summary=(
                f"{self.scanned} memories, similarity by {self.method} "
                f"(link >= {self.link_threshold}), pairs via {self.neighbour_method}: "
                f"{self.compared_pairs:,} compared, {self.candidate_pairs:,} linked, "
                f"{self.refused_conflicts} refused (numbers/names differ, or judged by a merge); "
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
            ),
        )


@dataclass(frozen=True, slots=True)
class DuplicatePair:
    id1: str
    id2: str
    similarity: float


def cluster_id_for(memory_ids: tuple[str, ...]) -> str:
    return "c-" + hashlib.blake2b("|".join(sorted(memory_ids)).encode(), digest_size=5).hexdigest()


def _merged_at(memory: Memory) -> float | None:
    provenance = memory.meta.extra.get(PROVENANCE_KEY)
    return provenance.get("merged_at") if isinstance(provenance, dict) else None


def _judged_by_merge(a: Memory, b: Memory) -> bool:
    """True when a merge already weighed these two: one is a merge, the other existed then.

    A merged memory states the union of its sources' details, so the guards would judge it
    more leniently than its sources; re-deciding an old pair on every run would snowball.
    """
    for merged, other in ((a, b), (b, a)):
        at = _merged_at(merged)
        if at is not None and other.created_at <= at:
            return True
    return False


class ClusterDetector:
    name = "cluster"

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder | None = None,
        tracker: IssueTracker | None = None,
        config: ClusterConfig | None = None,
        candidates: Embedder | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.tracker = tracker
        self.config = config or ClusterConfig()
        self.candidates = candidates  # finds the pairs MiniLM checks (None: MiniLM finds them)

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
        vectors, threshold, pairs = self._pairs([m.content for m in memories])
        clusters, refused = self._group(memories, vectors, pairs.i, pairs.j, pairs.sim)
        opened = 0
        if self.tracker is not None and cfg.open_issues and not dry_run:
            clusters = [
                self._open_issue(c, vectors.method) if c.action is not ClusterAction.KEEP else c
                for c in clusters
            ]
            opened = sum(c.issue_id is not None for c in clusters)
        log.info(
            "cluster: %d memories by %s via %s, %d pairs, %d clusters, %d issues%s",
            len(memories),
            vectors.method,
            pairs.method,
            len(pairs),
            len(clusters),
            opened,
            " (dry run)" if dry_run else "",
        )
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
            refused_conflicts=refused,
        )

    def _group(
        self,
        memories: list[Memory],
        vectors: TextVectors,
        pi: np.ndarray,
        pj: np.ndarray,
        ps: np.ndarray,
    ) -> tuple[list[Cluster], int]:
        cfg = self.config
        pi, pj, ps = strongest_per_row(pi, pj, ps, 2 * cfg.max_cluster_size)
        uf = CappedUnionFind(len(memories), cfg.max_cluster_size, self._conflicts(memories))
        order = np.argsort(-ps, kind="stable")  # as Python ints at once, not a scalar a pair
        for a, b in zip(pi[order].tolist(), pj[order].tolist(), strict=True):
            uf.union(a, b)
        groups: dict[int, list[int]] = {}
        for idx in {int(x) for x in np.concatenate([pi, pj])}:
            groups.setdefault(uf.find(idx), []).append(idx)
        clusters = []
        semantic = vectors.is_semantic
        merge_bar = cfg.merge_cohesion if semantic else cfg.tfidf_merge_cohesion
        for members in groups.values():
            if len(members) < 2:
                continue
            members.sort()
            sims = similarity_matrix(vectors, members)
            core = merge_core(sims, merge_bar) if cfg.trim_to_core else None
            parts = [members] if core is None else [[members[k] for k in core]]
            for part in parts:
                if len(part) < cfg.min_cluster_size:
                    continue
                at = [members.index(m) for m in part]
                cohesion = cohesion_of(sims[np.ix_(at, at)])
                ids = tuple(memories[i].id for i in part)
                clusters.append(
                    Cluster(
                        cluster_id=cluster_id_for(ids),
                        memory_ids=ids,
                        cohesion=min(1.0, cohesion),
                        action=self.action_for(cohesion, semantic),
                        previews=tuple(snippet(memories[i].content) for i in part),
                    )
                )
        clusters.sort(key=lambda c: (-c.cohesion, c.cluster_id))
        return clusters, uf.refused

    def duplicate_pairs(self, threshold: float) -> tuple[str, list[DuplicatePair]]:
        """Pairs of active memories at least ``threshold`` similar that the detail guards let
        through (the detector's own neighbour search and guards), strongest first; with the
        similarity method's name."""
        memories = sorted(self.store.list(status=MemoryStatus.ACTIVE), key=lambda m: m.id)
        vectors, _, pairs = self._pairs([m.content for m in memories], threshold)
        conflicts = self._conflicts(memories)
        out = [
            DuplicatePair(memories[i].id, memories[j].id, min(1.0, float(sim)))
            for i, j, sim in zip(
                pairs.i.tolist(), pairs.j.tolist(), pairs.sim.tolist(), strict=True
            )
            if conflicts is None or not conflicts(i, j)
        ]
        out.sort(key=lambda p: (-p.similarity, p.id1, p.id2))
        return vectors.method, out

    def _pairs(
        self, texts: list[str], link: float | None = None
    ) -> tuple[TextVectors, float, NeighbourPairs]:
        """Vectors, the link bar and the pairs reaching it: candidates from the static model
        checked by MiniLM when both are at hand, else MiniLM's (or TF-IDF's) own search."""
        cfg = self.config
        if self.candidates is not None and self.embedder is not None:
            threshold = cfg.link_threshold if link is None else link
            found = checked_candidates(
                texts,
                self.candidates,
                self.embedder,
                candidate_threshold=cfg.candidate_threshold,
                candidate_per_row=cfg.candidate_per_row,
                link_threshold=threshold,
                exact_limit=cfg.exact_limit,
            )
            if found is not None:
                return found[0], threshold, found[1]
        vectors = vectorize(texts, self.embedder)
        if link is None:
            link = cfg.link_threshold if vectors.is_semantic else cfg.tfidf_link_threshold
        pairs = vectors.neighbours(
            link, exact_limit=cfg.exact_limit, max_per_row=2 * cfg.max_cluster_size
        )
        return vectors, link, pairs

    def _conflicts(self, memories: list[Memory]) -> Callable[[int, int], bool] | None:
        cfg = self.config
        if not cfg.guard_details:
            return None
        extractor = DetailExtractor(memories)
        # Filled only for memories that reach a candidate pair; a list, not a dict and a helper
        # call: this runs for every pair the union-find tries (~145k at 10k memories).
        details: list[Details | None] = [None] * len(memories)
        overlap = cfg.names_min_overlap
        merges = {i for i, m in enumerate(memories) if _merged_at(m) is not None}
        # The verdict is symmetric and a refused join is tried again as its sets grow: half of
        # the ~145k pairs asked at 10k memories are repeats.
        verdicts: dict[tuple[int, int], bool] = {}

        def conflicting(i: int, j: int) -> bool:
            key = (i, j) if i < j else (j, i)
            known = verdicts.get(key)
            if known is not None:
                return known
            if (i in merges or j in merges) and _judged_by_merge(memories[i], memories[j]):
                verdicts[key] = True
                return True
            a, b = details[i], details[j]
            if a is None:
                a = details[i] = extractor.details(memories[i])
            if b is None:
                b = details[j] = extractor.details(memories[j])
            verdict = verdicts[key] = conflicts(a, b, overlap)
            return verdict

        return conflicting

    def _open_issue(self, cluster: Cluster, method: str) -> Cluster:
        assert self.tracker is not None
        verb = "Merge" if cluster.action is ClusterAction.MERGE else "Review"
        listing = "\n".join(
            f"- {short(mid)}: {p}"
            for mid, p in zip(cluster.memory_ids, cluster.previews, strict=True)
        )
        issue = self.tracker.create(
            f"{verb} {cluster.size} similar memories (cohesion {cluster.cohesion:.2f})",
            description=f"Similarity by {method}.\n\n{listing}",
            # A merge request is tracked under merge as well (SemanticMerge claims and closes it).
            labels=(LABEL_CLUSTER, f"action:{cluster.action.value}")
            + ((LABEL_MERGE,) if cluster.action is ClusterAction.MERGE else ()),
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


__all__ = [
    "Cluster",
    "ClusterAction",
    "ClusterConfig",
    "ClusterDetector",
    "ClusterReport",
    "DuplicatePair",
    "cluster_id_for",
]
