"""The cluster detector's configuration and results (agents.cluster_detector finds them)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum

from cortexgraph.agents.common import ReportTable
from cortexgraph.storage.errors import InvalidInputError


class ClusterAction(StrEnum):
    MERGE = "merge"
    REVIEW = "review"
    KEEP = "keep"


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    # Chosen on the labelled LoCoMo pairs and the demo set's groups together
    # (bench/restatement_bench.py, docs/pipeline.md "Merging only restatements"). With
    # complete linkage every pair of a merge reaches ``merge_cohesion``, not only their mean.
    link_threshold: float = 0.65  # embeddings cosine
    # TF-IDF is lexical: paraphrases score far lower (0.1-0.5 on the demo set), so its bar and
    # its merge/review cohesions are lower, and tuned to stay precise rather than complete.
    tfidf_link_threshold: float = 0.35
    tfidf_merge_cohesion: float = 0.6
    tfidf_review_cohesion: float = 0.35
    max_cluster_size: int = 12
    min_cluster_size: int = 2  # smaller groups are not reported (CORTEXGRAPH_MIN_CLUSTER_SIZE)
    merge_cohesion: float = 0.75  # the mean of a merge's pairs, each linked
    review_cohesion: float = 0.65
    # Two transcript lines ("Speaker: ...") merge only at this similarity or more: lines of one
    # conversation share its people, topic and small talk, so unlike claims score high.
    transcript_merge_cohesion: float = 0.8
    # A fact is seldom said more than a few times; a bigger "merge" is a topic, not a fact.
    max_merge_size: int = 4
    open_issues: bool = True
    exact_limit: int = 6000  # above this many memories, an inverted-file index finds pairs
    # Memories whose numbers or names are swapped are different facts, however similar the
    # wording (agents.duplicates); they are never linked into one cluster.
    guard_details: bool = True
    names_min_overlap: float = 0.6
    # Names written as code (snake_case, dotted: dunning_runs, app.tenant_id) count as names
    # there: a note about dunning_runs is not one about current_setting('app.tenant_id').
    identifier_names: bool = True
    # Two notes (not two transcript lines) that state the same numbers merge from the link
    # bar: a fact said again repeats its specifics (9:45, Postgres 16, release 2.3) while its
    # words change, which MiniLM scores 0.65-0.75 (bench/restatement_bench.py).
    same_numbers_merge: bool = True
    # Two speakers, two sessions, or a question and a statement are never one claim said
    # twice (agents.restatement); ``restatement_questions``: "most" (a line most of whose
    # sentences ask is a question), "last" (its last sentence asks) or "off".
    restatements_only: bool = True
    restatement_questions: str = "most"
    # Pairs found on batch vectors this far below the link bar are checked on each text's own
    # vector (the int8 graph, the default embedder up to 2.0, moved a pair's batch cosine by
    # up to 0.064 with batch order on LoCoMo turns).
    batch_margin: float = 0.07
    # Pairs at least this similar that the restatement rule kept apart become ``related``
    # links (None: the merge bar), each memory's strongest ``max_related_per_memory``.
    relate_threshold: float | None = None
    max_related_per_memory: int = 2
    # With a candidate model (a static model distilled from MiniLM, agents.candidate_pairs):
    # its pairs at this cosine, each memory's strongest candidate_per_row, are checked by MiniLM.
    candidate_threshold: float = 0.5
    candidate_per_row: int = 48

    def __post_init__(self) -> None:
        if not 0.0 <= self.review_cohesion <= self.merge_cohesion <= 1.0:
            raise InvalidInputError("need 0 <= review_cohesion <= merge_cohesion <= 1")
        if self.max_cluster_size < 2 or self.max_merge_size < 2:
            raise InvalidInputError("max_cluster_size and max_merge_size must be at least 2")
        if not 2 <= self.min_cluster_size <= self.max_cluster_size:
            raise InvalidInputError("need 2 <= min_cluster_size <= max_cluster_size")
        if self.restatement_questions not in ("last", "most", "off"):
            raise InvalidInputError("restatement_questions: 'last', 'most' or 'off'")


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
class DuplicatePair:
    id1: str
    id2: str
    similarity: float


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
    refused_conflicts: int = 0  # linked pairs the guards refused (agents.link_guards)
    refused_by: tuple[tuple[str, int], ...] = ()  # the same, by reason
    # Closely related memories that are not one fact: SemanticMerge links them.
    related: tuple[DuplicatePair, ...] = field(default=())
    skipped: str = ""  # why nothing was compared (a run after no change: the store not opened)

    def count(self, action: ClusterAction) -> int:
        return sum(c.action is action for c in self.clusters)

    def table(self) -> ReportTable:
        if self.skipped:
            return ReportTable(title="Clusters", summary=self.skipped, columns=(), rows=())
        why = ", ".join(f"{n} {r}" for r, n in self.refused_by) or "none"
        return ReportTable(
            title="Clusters",
            summary=(
                f"{self.scanned} memories, similarity by {self.method} "
                f"(link >= {self.link_threshold}), pairs via {self.neighbour_method}: "
                f"{self.compared_pairs:,} compared, {self.candidate_pairs:,} linked, "
                f"{self.refused_conflicts} refused ({why}); "
                f"merge {self.count(ClusterAction.MERGE)}, review "
                f"{self.count(ClusterAction.REVIEW)}, keep {self.count(ClusterAction.KEEP)}; "
                f"{len(self.related)} related pair(s); {self.issues_opened} issue(s)"
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


def cluster_id_for(memory_ids: tuple[str, ...]) -> str:
    return "c-" + hashlib.blake2b("|".join(sorted(memory_ids)).encode(), digest_size=5).hexdigest()


__all__ = [
    "Cluster",
    "ClusterAction",
    "ClusterConfig",
    "ClusterReport",
    "DuplicatePair",
    "cluster_id_for",
]
