"""Consolidation work tracked as beads issues, committed to git through GitPython.

    from cortexgraph.storage.beads import open_tracker
    tracker = open_tracker("~/.config/cortexgraph/jsonl", search_parents=False)
    issue = tracker.create("Merge 3 notes on PostgreSQL", labels=["consolidation:cluster"],
                           metadata={"memory_ids": [...]}, dedupe_key="cluster:ab12")
    if tracker.claim(issue.id, "semantic-merge"):
        tracker.close(issue.id, "merged 3 memories")

``InMemoryIssueTracker`` (memory_tracker.py) keeps the same rules in one process's memory, for
when tracking is off or the repository unusable. Imports nothing of ours but storage.errors;
GitPython is imported when a tracker is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cortexgraph.storage.lazy_names import lazy_names

if TYPE_CHECKING:
    from cortexgraph.storage.beads.commit_log import IssueCommit
    from cortexgraph.storage.beads.errors import (
        CommitError,
        IssueNotFoundError,
        IssueRecordError,
        TrackerUnavailableError,
    )
    from cortexgraph.storage.beads.git_repo import GitIdentity
    from cortexgraph.storage.beads.memory_tracker import InMemoryIssueTracker, TrackedIssue
    from cortexgraph.storage.beads.opening import open_tracker
    from cortexgraph.storage.beads.schema import (
        DEDUPE_KEY,
        ISSUE_TYPES,
        STATUSES,
        BeadsIssue,
        Comment,
        Dependency,
        issue_as_json,
        issue_from_line,
        issue_from_record,
        issue_to_line,
        issue_to_record,
    )
    from cortexgraph.storage.beads.tracker import BeadsTracker

# Names load on first use (PEP 562): importing one module of the package (the tracker, as a
# consolidation run does) loads what that module needs, not the in-memory tracker beside it.
_SCHEMA = "cortexgraph.storage.beads.schema"
_ERRORS = "cortexgraph.storage.beads.errors"
_LAZY = {
    "IssueCommit": "cortexgraph.storage.beads.commit_log",
    "CommitError": _ERRORS,
    "IssueNotFoundError": _ERRORS,
    "IssueRecordError": _ERRORS,
    "TrackerUnavailableError": _ERRORS,
    "GitIdentity": "cortexgraph.storage.beads.git_repo",
    "InMemoryIssueTracker": "cortexgraph.storage.beads.memory_tracker",
    "TrackedIssue": "cortexgraph.storage.beads.memory_tracker",
    "DEDUPE_KEY": _SCHEMA,
    "ISSUE_TYPES": _SCHEMA,
    "STATUSES": _SCHEMA,
    "BeadsIssue": _SCHEMA,
    "Comment": _SCHEMA,
    "Dependency": _SCHEMA,
    "issue_as_json": _SCHEMA,
    "issue_from_line": _SCHEMA,
    "issue_from_record": _SCHEMA,
    "issue_to_line": _SCHEMA,
    "issue_to_record": _SCHEMA,
    "BeadsTracker": "cortexgraph.storage.beads.tracker",
    "open_tracker": "cortexgraph.storage.beads.opening",
}


__getattr__ = lazy_names(__name__, _LAZY)


__all__ = [
    "DEDUPE_KEY",
    "ISSUE_TYPES",
    "STATUSES",
    "BeadsIssue",
    "BeadsTracker",
    "Comment",
    "CommitError",
    "Dependency",
    "GitIdentity",
    "InMemoryIssueTracker",
    "IssueCommit",
    "IssueNotFoundError",
    "IssueRecordError",
    "TrackedIssue",
    "TrackerUnavailableError",
    "issue_as_json",
    "issue_from_line",
    "issue_from_record",
    "issue_to_line",
    "issue_to_record",
    "open_tracker",
]
