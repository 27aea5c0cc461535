"""An issue tracker that lives in one process's memory, beside the real one (BeadsTracker).

Used when issue tracking is disabled or the beads repository is unusable (the pipeline still
hands work from agent to agent, it just leaves no history), and as the tracker in agents' tests.
Same rules as BeadsTracker: the same statuses, dedupe keys, atomic claims, idempotent close.
Both fit agents.protocols.IssueTracker structurally (storage may not import agents);
``agents.memory_tracker`` re-exports this module's names (their older home).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cortexgraph.storage.beads.schema import DEDUPE_KEY, STATUSES
from cortexgraph.storage.errors import InvalidInputError, NotFoundError


@dataclass(frozen=True, slots=True)
class TrackedIssue:
    """A plain issue (agents.protocols.IssueView): what this tracker returns; fakes build them."""

    id: str
    title: str
    status: str
    labels: tuple[str, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    assignee: str | None = None
    description: str = ""


_UPDATABLE = frozenset(
    {"title", "description", "status", "priority", "labels", "assignee", "metadata"}
)


@dataclass(frozen=True, slots=True)
class _Record:
    issue: TrackedIssue
    priority: int
    close_reason: str = ""


class InMemoryIssueTracker:
    """Thread-safe, in-process issue tracker; ids look like ``mem-1``, ``mem-2`` ..."""

    backend = "memory"

    def __init__(self, prefix: str = "mem", *, on_change: Callable[[str], None] | None = None):
        self._prefix = prefix
        self._records: dict[str, _Record] = {}
        self._by_key: dict[str, str] = {}  # dedupe key -> issue id (a scan was O(n) per create)
        self._lock = threading.Lock()
        self._next = 1
        self._on_change = on_change  # e.g. a logger: what a commit message would have said

    # -- IssueTracker -------------------------------------------------------------------
    def create(
        self,
        title: str,
        *,
        description: str = "",
        labels: Sequence[str] = (),
        priority: int = 2,
        metadata: Mapping[str, Any] | None = None,
        dedupe_key: str | None = None,
    ) -> TrackedIssue:
        title = _check_title(title)
        _check_priority(priority)
        meta = dict(metadata or {})
        if dedupe_key is not None:
            meta[DEDUPE_KEY] = dedupe_key
        with self._lock:
            if dedupe_key is not None and dedupe_key in self._by_key:
                return self._records[self._by_key[dedupe_key]].issue
            issue_id = f"{self._prefix}-{self._next}"
            self._next += 1
            issue = TrackedIssue(
                id=issue_id,
                title=title,
                status="open",
                labels=_labels(labels),
                metadata=meta,
                description=description,
            )
            self._records[issue_id] = _Record(issue, priority)
            held = meta.get(DEDUPE_KEY)
            if held is not None:  # given here or only in ``metadata``: held, as BeadsTracker
                self._by_key.setdefault(str(held), issue_id)
            self._changed(f"{issue_id}: created ({title})")
            return issue

    def query(
        self,
        *,
        labels: Sequence[str] = (),
        status: str | None = None,
        assignee: str | None = None,
    ) -> list[TrackedIssue]:
        wanted = set(labels)
        with self._lock:
            issues = [r.issue for r in self._records.values()]
        return [
            i
            for i in issues
            if wanted <= set(i.labels)
            and (status is None or i.status == status)
            and (assignee is None or i.assignee == assignee)
        ]

    def claim(self, issue_id: str, assignee: str) -> TrackedIssue | None:
        if not assignee:
            raise InvalidInputError("claim needs a non-empty assignee")
        with self._lock:
            rec = self._get(issue_id)
            if rec.issue.status != "open" or rec.issue.assignee not in (None, assignee):
                return None
            issue = replace(rec.issue, status="in_progress", assignee=assignee)
            self._records[issue_id] = replace(rec, issue=issue)
            self._changed(f"{issue_id}: claimed by {assignee}")
            return issue

    def update(self, issue_id: str, **changes: Any) -> TrackedIssue:
        unknown = set(changes) - _UPDATABLE
        if unknown:
            raise InvalidInputError(
                f"cannot update {sorted(unknown)}; allowed: {sorted(_UPDATABLE)}"
            )
        with self._lock:
            rec = self._get(issue_id)
            fields: dict[str, Any] = {}
            priority = rec.priority
            for key, value in changes.items():
                if key == "title":
                    fields["title"] = _check_title(value)
                elif key == "status":
                    fields["status"] = _check_status(value)
                elif key == "priority":
                    _check_priority(value)
                    priority = value
                elif key == "labels":
                    fields["labels"] = _labels(value)
                elif key == "metadata":
                    fields["metadata"] = {**rec.issue.metadata, **dict(value or {})}
                else:
                    fields[key] = value
            issue = replace(rec.issue, **fields)
            if issue == rec.issue and priority == rec.priority:
                return issue
            self._records[issue_id] = replace(rec, issue=issue, priority=priority)
            if issue.metadata.get(DEDUPE_KEY) != rec.issue.metadata.get(DEDUPE_KEY):
                self._rekeyed()
            self._changed(f"{issue_id}: updated {', '.join(sorted(changes))}")
            return issue

    def close(self, issue_id: str, reason: str) -> TrackedIssue:
        with self._lock:
            rec = self._get(issue_id)
            if rec.issue.status == "closed":
                return rec.issue
            issue = replace(rec.issue, status="closed")
            self._records[issue_id] = replace(rec, issue=issue, close_reason=reason)
            self._changed(f"{issue_id}: closed ({reason})")
            return issue

    # -- extras -------------------------------------------------------------------------
    def get(self, issue_id: str) -> TrackedIssue:
        with self._lock:
            return self._get(issue_id).issue

    def close_reason(self, issue_id: str) -> str:
        with self._lock:
            return self._get(issue_id).close_reason

    def priority(self, issue_id: str) -> int:
        with self._lock:
            return self._get(issue_id).priority

    def _get(self, issue_id: str) -> _Record:
        try:
            return self._records[issue_id]
        except KeyError:
            raise NotFoundError(f"no issue {issue_id!r} in the in-memory tracker") from None

    def _rekeyed(self) -> None:
        """An issue's dedupe key changed: each key's holder is again the first issue still
        carrying it, as in BeadsTracker (a rare change: the index is made again)."""
        self._by_key = {}
        for issue_id, rec in self._records.items():
            key = rec.issue.metadata.get(DEDUPE_KEY)
            if key is not None:
                self._by_key.setdefault(str(key), issue_id)

    def _changed(self, message: str) -> None:
        if self._on_change is not None:
            self._on_change(message)


def _check_title(title: str) -> str:
    title = (title or "").strip()
    if not title or len(title) > 500:
        raise InvalidInputError("an issue title must be 1-500 characters")
    return title


def _check_priority(priority: int) -> None:
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 4:
        raise InvalidInputError(f"priority must be an integer 0-4, got {priority!r}")


def _check_status(status: str) -> str:
    if status not in STATUSES:
        raise InvalidInputError(f"status must be one of {sorted(STATUSES)}, got {status!r}")
    return status


def _labels(labels: Sequence[str]) -> tuple[str, ...]:
    if isinstance(labels, str):
        raise InvalidInputError("labels must be a list of strings, not one string")
    return tuple(dict.fromkeys(str(x).strip() for x in labels if str(x).strip()))


__all__ = ["InMemoryIssueTracker", "TrackedIssue"]
