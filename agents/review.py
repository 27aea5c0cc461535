"""A person's answer to a review issue: approve (merge the cluster now) or reject (keep the
memories apart). Either way the beads issue is closed with who decided and what happened, so
the cluster detector, which dedupes issues by cluster, does not ask again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cortexgraph.agents.common import LABEL_CLUSTER, RefusedError
from cortexgraph.agents.merge_ops import apply_plan, plan_merge
from cortexgraph.agents.protocols import IssueTracker
from cortexgraph.agents.semantic_merge import MergeConfig
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.storage.protocol import MemoryStore

REVIEW_LABEL = "action:review"


@dataclass(frozen=True, slots=True)
class ReviewDecision:
    issue_id: str
    decision: str  # approved | rejected
    merged_id: str | None
    memory_ids: tuple[str, ...]
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "issue_id": self.issue_id,
            "decision": self.decision,
            "merged_id": self.merged_id,
            "memory_ids": list(self.memory_ids),
            "reason": self.reason,
        }


def pending_reviews(tracker: IssueTracker) -> list[Any]:
    """Open cluster issues that wait for a person."""
    return [i for i in tracker.query(labels=(LABEL_CLUSTER, REVIEW_LABEL)) if i.status != "closed"]


def _open_review(tracker: IssueTracker, issue_id: str) -> Any:
    found = [i for i in tracker.query(labels=(LABEL_CLUSTER,)) if i.id == issue_id]
    if not found:
        raise RefusedError(
            f"no cluster review issue {issue_id}; list them with `cortexgraph issues list`"
        )
    issue = found[0]
    if issue.status == "closed":
        raise RefusedError(f"issue {issue_id} is already closed; nothing to decide")
    return issue


def approve_review(
    store: MemoryStore,
    tracker: IssueTracker,
    issue_id: str,
    *,
    now: float,
    by: str = "a person",
    config: MergeConfig | None = None,
) -> ReviewDecision:
    """Merge the issue's memories that are still active; close the issue."""
    cfg = config or MergeConfig()
    issue = _open_review(tracker, issue_id)
    ids = tuple(issue.metadata.get("memory_ids") or ())
    live = [m for m in map(store.find, ids) if m is not None and m.status is MemoryStatus.ACTIVE]
    if len(live) < 2:
        reason = f"approved by {by}; fewer than two of its memories are still active"
        tracker.close(issue_id, reason)
        return ReviewDecision(issue_id, "approved", None, ids, reason)
    cohesion = float(issue.metadata.get("cohesion") or 0.0)
    plan = plan_merge(live, cohesion, now, cfg.cohesion_bonus, cfg.coverage, limits=store.config)
    apply_plan(store, plan, now, issue_id=issue_id)
    reason = f"approved by {by}: merged into {plan.memory.id}"
    tracker.close(issue_id, reason)
    return ReviewDecision(issue_id, "approved", plan.memory.id, tuple(m.id for m in live), reason)


def reject_review(tracker: IssueTracker, issue_id: str, *, by: str = "a person") -> ReviewDecision:
    """Keep the memories apart; close the issue."""
    issue = _open_review(tracker, issue_id)
    reason = f"rejected by {by}: kept apart"
    tracker.close(issue_id, reason)
    ids = tuple(issue.metadata.get("memory_ids") or ())
    return ReviewDecision(issue_id, "rejected", None, ids, reason)


__all__ = ["REVIEW_LABEL", "ReviewDecision", "approve_review", "pending_reviews", "reject_review"]
