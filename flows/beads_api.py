"""cortexgraph 1.x's beads helpers: ``from cortexgraph.agents.beads_integration import ...``.

    issue_id = create_consolidation_issue(agent="decay", memory_ids=["..."], action="reinforce",
                                          urgency="high")
    open_issues = query_consolidation_issues(agent="cluster", status="open")
    if claim_issue(issue_id):
        close_issue(issue_id, "Processed successfully")

Thin: each call opens the configured beads tracker (CORTEXGRAPH_BEADS_REPO, else the storage
directory; cortexgraph.user_store.open_configured_tracker), the one the agents and
``cortexgraph issues`` use, with the labels the agents use (``consolidation:<agent>``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cortexgraph.agents.pipeline import AGENT_ORDER
from cortexgraph.settings import Settings, load_settings
from cortexgraph.storage.errors import InvalidInputError

DEFAULT_ASSIGNEE = "cortexgraph-agent"


def _tracker(settings: Settings | None) -> Any:
    from cortexgraph.user_store import open_configured_tracker

    return open_configured_tracker(settings or load_settings())


def _label(agent: str) -> str:
    if agent not in AGENT_ORDER:
        raise InvalidInputError(f"unknown agent {agent!r}; choose from {', '.join(AGENT_ORDER)}")
    return f"consolidation:{agent}"


def _view(issue: Any) -> dict[str, Any]:
    return {
        "id": issue.id,
        "title": issue.title,
        "status": issue.status,
        "labels": list(issue.labels),
        "assignee": issue.assignee,
        "description": issue.description,
        "metadata": dict(issue.metadata or {}),
    }


def create_consolidation_issue(
    agent: str,
    memory_ids: Sequence[str],
    action: str,
    urgency: str | None = None,
    *,
    title: str | None = None,
    description: str = "",
    metadata: Mapping[str, Any] | None = None,
    priority: int | None = None,
    settings: Settings | None = None,
) -> str:
    """Open (or find, for the same agent, action and memories) a consolidation issue; its id."""
    labels = [_label(agent), f"action:{action}"] + ([f"urgency:{urgency}"] if urgency else [])
    ids = list(memory_ids)
    levels = {"high": 1, "medium": 2, "low": 3}
    issue = _tracker(settings).create(
        title or f"{agent}: {action} {len(ids)} memor{'y' if len(ids) == 1 else 'ies'}",
        description=description,
        labels=labels,
        priority=priority if priority is not None else levels.get(urgency or "", 2),
        metadata={
            **(metadata or {}),
            "memory_ids": ids,
            "action": action,
            **({"urgency": urgency} if urgency else {}),
        },
        dedupe_key=f"{agent}:{action}:{','.join(sorted(ids))}",
    )
    return issue.id


def query_consolidation_issues(
    agent: str | None = None, status: str | None = None, *, settings: Settings | None = None
) -> list[dict[str, Any]]:
    """Issues of one agent (or all consolidation issues), optionally of one status."""
    tracker = _tracker(settings)
    if agent is not None:
        return [_view(i) for i in tracker.query(labels=[_label(agent)], status=status)]
    return [
        _view(i)
        for i in tracker.query(status=status)
        if any(label.startswith("consolidation:") for label in i.labels)
    ]


def claim_issue(
    issue_id: str, assignee: str = DEFAULT_ASSIGNEE, *, settings: Settings | None = None
) -> bool:
    """Take an open issue; False when someone else holds it (or it is closed)."""
    return _tracker(settings).claim(issue_id, assignee) is not None


def close_issue(issue_id: str, reason: str = "done", *, settings: Settings | None = None) -> bool:
    """Close an issue with a reason; True once it is closed."""
    return _tracker(settings).close(issue_id, reason).status == "closed"


__all__ = ["claim_issue", "close_issue", "create_consolidation_issue", "query_consolidation_issues"]
