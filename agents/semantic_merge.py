"""SemanticMerge: turns merge clusters into one memory without losing information.

Work comes from open tracked issues labelled ``consolidation:cluster`` + ``action:merge`` (claimed,
processed, closed with a reason) and from clusters handed in directly (a run without a tracker,
or a dry run). The merged memory keeps every distinct sentence, the union of tags and entities,
the earliest ``created_at``, the latest ``last_used``, the summed ``use_count`` and the strongest
strength plus a cohesion bonus (capped at 2.0). It points at each source with a
``consolidated_from`` relation; sources are archived, and their other relations move to the merged
memory. The provenance kept in ``meta.extra["merge"]`` lets ``undo`` restore everything.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cortexgraph.agents.cluster_detector import (
    Cluster,
    ClusterAction,
    DuplicatePair,
    cluster_id_for,
)
from cortexgraph.agents.common import LABEL_CLUSTER, AgentError, ReportTable, short, snippet
from cortexgraph.agents.merge_ops import (
    MergePlan,
    MergeTooLargeError,
    apply_plan,
    link_members,
    plan_merge,
    undo_merge,
)
from cortexgraph.agents.protocols import IssueTracker, IssueView
from cortexgraph.agents.undo import held_by_undo
from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore

log = logging.getLogger(__name__)
HOLD_EVERY = 32  # merges a store hold spans (~1 ms each at 10k)


class MergeMode(StrEnum):
    PREVIEW = "preview"  # say what would be merged; change nothing
    APPLY = "apply"  # merge, archive sources, re-point relations
    LINK = "link"  # relate the members to each other without merging


@dataclass(frozen=True, slots=True)
class MergeConfig:
    mode: MergeMode = MergeMode.APPLY
    cohesion_bonus: float = 0.2  # strength bonus = cohesion_bonus * cohesion
    coverage: float = 0.8  # see agents.sentences
    assignee: str = "semantic-merge"

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", MergeMode(self.mode))


@dataclass(frozen=True, slots=True)
class MergeOutcome:
    cluster_id: str
    source_ids: tuple[str, ...]
    # refused: a store limit refuses the merged text; left, its issue untouched, for a person
    status: str  # merged | previewed | linked | skipped | failed | refused
    reason: str
    merged_id: str | None = None
    issue_id: str | None = None
    content: str = ""
    strength: float = 0.0
    sentences_kept: int = 0
    sentences_collapsed: int = 0
    relations_repointed: int = 0
    # merged: its consolidated_from relations; linked: the related relations made (1.x name)
    relation_ids: tuple[str, ...] = ()

    @property
    def new_memory_id(self) -> str | None:  # 1.x MergeResult names
        return self.merged_id

    @property
    def success(self) -> bool:
        return self.status in ("merged", "previewed", "linked")


@dataclass(frozen=True, slots=True)
class MergeReport:
    dry_run: bool
    mode: MergeMode
    outcomes: tuple[MergeOutcome, ...]
    issues_closed: int
    related_linked: int = 0  # related pairs linked (a preview: that would be linked)
    skipped: str = ""  # why nothing was merged (a run after no change: the store not opened)

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def archived(self) -> int:
        return sum(len(o.source_ids) for o in self.outcomes if o.status == "merged")

    def table(self) -> ReportTable:
        if self.skipped:
            return ReportTable(title="Semantic merge", summary=self.skipped, columns=(), rows=())
        return ReportTable(
            title="Semantic merge",
            summary=(
                f"mode {self.mode.value}: merged {self.count('merged')} "
                f"({self.archived} sources archived), previewed {self.count('previewed')}, "
                f"linked {self.count('linked')}, skipped {self.count('skipped')}, "
                f"failed {self.count('failed')}, refused {self.count('refused')}; "
                f"{self.related_linked} related pair(s) "
                f"{'to link' if self.mode is MergeMode.PREVIEW else 'linked'}; "
                f"{self.issues_closed} issue(s) closed"
            ),
            columns=("cluster", "sources", "status", "merged", "sentences", "content"),
            rows=tuple(
                (
                    o.cluster_id,
                    str(len(o.source_ids)),
                    o.status,
                    short(o.merged_id) if o.merged_id else "",
                    f"{o.sentences_kept} (+{o.sentences_collapsed} collapsed)",
                    snippet(o.content or o.reason),
                )
                for o in self.outcomes
            ),
        )


@dataclass(frozen=True, slots=True)
class _Work:
    cluster_id: str
    memory_ids: tuple[str, ...]
    cohesion: float
    issue: IssueView | None = None


class SemanticMerge:
    name = "merge"

    def __init__(
        self,
        store: MemoryStore,
        tracker: IssueTracker | None = None,
        config: MergeConfig | None = None,
    ) -> None:
        self.store = store
        self.tracker = tracker
        self.config = config or MergeConfig()

    def run(
        self,
        *,
        now: float,
        dry_run: bool = False,
        clusters: Iterable[Cluster] = (),
        related: Iterable[DuplicatePair] = (),
    ) -> MergeReport:
        mode = MergeMode.PREVIEW if dry_run else self.config.mode
        outcomes: list[MergeOutcome] = []
        closed = 0
        pending = self._pending(clusters)
        for start in range(0, len(pending), HOLD_EVERY):
            with self._holding(mode):
                for work in pending[start : start + HOLD_EVERY]:
                    outcome = self._process(work, mode, now)
                    outcomes.append(outcome)
                    closed += outcome.issue_id is not None and outcome.status in (
                        "merged",
                        "linked",
                        "skipped",
                    )
        linked = self._relate(list(related), mode, now)
        log.info(
            "merge (%s): %d merged, %d previewed, %d linked, %d skipped, %d failed, %d refused; "
            "%d related",
            mode.value,
            *(
                sum(o.status == s for o in outcomes)
                for s in ("merged", "previewed", "linked", "skipped", "failed", "refused")
            ),
            linked,
        )
        return MergeReport(dry_run, mode, tuple(outcomes), closed, linked)

    def plan(self, memory_ids: Sequence[str], cohesion: float, now: float) -> MergePlan:
        """The merged memory these sources would become (nothing is written)."""
        return self._plan([self.store.get(mid) for mid in memory_ids], cohesion, now)

    def _plan(self, sources: Sequence[Memory], cohesion: float, now: float) -> MergePlan:
        return plan_merge(
            sources,
            cohesion,
            now,
            self.config.cohesion_bonus,
            self.config.coverage,
            limits=self.store.config,
        )

    def undo(self, merged_id: str, *, now: float, dry_run: bool = False) -> tuple[str, ...]:
        """Restore the sources of a merge and their relations; delete the merged memory."""
        return undo_merge(self.store, merged_id, now=now, dry_run=dry_run)

    # -- internals -------------------------------------------------------------------------
    def _relate(self, pairs: list[DuplicatePair], mode: MergeMode, now: float) -> int:
        """Link each related pair whose two memories are still active and not yet related;
        how many (a preview counts, and writes nothing)."""
        count = 0
        with self._holding(mode):
            for pair in pairs:
                a, b = self.store.find(pair.id1), self.store.find(pair.id2)
                if a is None or b is None:
                    continue
                if a.status is not MemoryStatus.ACTIVE or b.status is not MemoryStatus.ACTIVE:
                    continue
                if any(
                    {r.from_memory_id, r.to_memory_id} == {a.id, b.id}
                    for r in self.store.relations(memory_id=a.id)
                ):
                    continue
                count += 1
                if mode is MergeMode.PREVIEW:
                    continue
                self.store.add_relation(
                    a.id,
                    b.id,
                    "related",
                    strength=round(min(1.0, pair.similarity), 4),
                    metadata={"discovered_by": "cluster-detector", "similarity": pair.similarity},
                    now=now,
                )
        return count

    def _holding(self, mode: MergeMode) -> AbstractContextManager[object]:
        """HOLD_EVERY merges under one hold of the store (storage's ``writing``): taking a
        JSONL store's file lock once a merge was a sixth of the 10k merge's CPU. Held for tens
        of milliseconds, so other writers wait no longer than that; the issue lock is taken
        inside it, never the other way round. A preview writes nothing and holds nothing."""
        if mode is MergeMode.PREVIEW:
            return nullcontext()
        return self.store.writing()

    def _pending(self, clusters: Iterable[Cluster]) -> list[_Work]:
        work: dict[str, _Work] = {}
        if self.tracker is not None:
            for issue in self.tracker.query(labels=(LABEL_CLUSTER, "action:merge"), status="open"):
                ids = tuple(issue.metadata.get("memory_ids") or ())
                cid = str(issue.metadata.get("cluster_id") or cluster_id_for(ids))
                work[cid] = _Work(cid, ids, float(issue.metadata.get("cohesion") or 0.0), issue)
        for c in clusters:
            if c.action is ClusterAction.MERGE and c.cluster_id not in work:
                work[c.cluster_id] = _Work(c.cluster_id, c.memory_ids, c.cohesion)
        return list(work.values())

    def _process(self, work: _Work, mode: MergeMode, now: float) -> MergeOutcome:
        issue = work.issue
        # Planned before the issue is claimed: a merge the store's limits refuse stays so until
        # a person changes one of its memories, and claiming and reopening its issue every run
        # (an hourly beads commit) would say nothing new. Read under the store's hold, as the
        # merge that follows (``_holding``).
        live = self._live(work)
        try:
            plan = (
                None
                if mode is MergeMode.LINK or len(live) < 2
                else self._plan(live, work.cohesion, now)
            )
        except MergeTooLargeError as exc:
            log.warning("merge of %s refused: %s", work.cluster_id, exc)
            return MergeOutcome(work.cluster_id, work.memory_ids, "refused", str(exc))
        except CortexGraphError as exc:  # its issue, never claimed, stays open as it was
            log.warning("merge of %s failed: %s", work.cluster_id, exc)
            return MergeOutcome(work.cluster_id, work.memory_ids, "failed", str(exc))
        if (
            issue is not None
            and mode is not MergeMode.PREVIEW
            and self.tracker.claim(issue.id, self.config.assignee) is None  # type: ignore[union-attr]
        ):
            return MergeOutcome(
                work.cluster_id, work.memory_ids, "skipped", "claimed by someone else"
            )
        try:
            outcome = self._do(work, mode, now, live, plan)
        except CortexGraphError as exc:
            log.warning("merge of %s failed: %s", work.cluster_id, exc)
            if issue is not None and mode is not MergeMode.PREVIEW:
                self.tracker.update(issue.id, status="open", assignee=None)  # type: ignore[union-attr]
            return MergeOutcome(work.cluster_id, work.memory_ids, "failed", str(exc))
        if issue is not None and mode is not MergeMode.PREVIEW:
            reason = (
                outcome.reason
                if outcome.merged_id is None
                else (f"merged into {outcome.merged_id}")
            )
            self.tracker.close(issue.id, reason)  # type: ignore[union-attr]
            return _with(outcome, issue_id=issue.id)
        return outcome

    def _live(self, work: _Work) -> list[Memory]:
        return [
            m
            for m in map(self.store.find, work.memory_ids)
            # a merge a person undid is not redone until a source is used again
            if m is not None and m.status is MemoryStatus.ACTIVE and not held_by_undo(m)
        ]

    def _do(
        self,
        work: _Work,
        mode: MergeMode,
        now: float,
        live: list[Memory],
        plan: MergePlan | None,
    ) -> MergeOutcome:
        """``live``: the cluster's memories still active (in its order), read with ``plan``
        (None for a link, or fewer than two) under the store's hold, before the claim."""
        if len(live) < 2:
            return MergeOutcome(
                work.cluster_id,
                work.memory_ids,
                "skipped",
                "fewer than two of its memories are still active",
            )
        ids = tuple(m.id for m in live)
        if mode is MergeMode.LINK:
            made = link_members(self.store, live, work.cohesion, now)
            return MergeOutcome(
                work.cluster_id, ids, "linked", f"{len(made)} relation(s) added", relation_ids=made
            )
        assert plan is not None  # two or more live sources, not a link
        base: dict[str, Any] = {
            "cluster_id": work.cluster_id,
            "source_ids": ids,
            "content": plan.memory.content,
            "strength": plan.memory.strength,
            "sentences_kept": plan.sentences_kept,
            "sentences_collapsed": plan.sentences_collapsed,
        }
        if mode is MergeMode.PREVIEW:
            return MergeOutcome(status="previewed", reason="dry run", **base)
        applied = apply_plan(self.store, plan, now, issue_id=work.issue.id if work.issue else None)
        return MergeOutcome(
            status="merged",
            reason="merged",
            merged_id=plan.memory.id,
            relations_repointed=applied.repointed,
            relation_ids=applied.relation_ids,
            **base,
        )


def _with(outcome: MergeOutcome, **changes: Any) -> MergeOutcome:
    from dataclasses import replace

    return replace(outcome, **changes)


__all__ = [
    "AgentError",
    "MergeConfig",
    "MergeMode",
    "MergeOutcome",
    "MergeReport",
    "SemanticMerge",
]
