"""Errors of the beads issue tracker (all derive from cortexgraph.storage.errors)."""

from __future__ import annotations

from cortexgraph.storage.errors import InvalidInputError, NotFoundError, StorageError


class IssueNotFoundError(NotFoundError):
    """No issue with that id in .beads/issues.jsonl."""


class IssueRecordError(InvalidInputError):
    """A JSONL line is not a valid beads issue record (says which field and why)."""


class TrackerUnavailableError(StorageError):
    """The tracker's git repository cannot be used (missing git, bare repo, no permission)."""


class CommitError(StorageError):
    """The issue file was written but committing it to git failed."""


class PackError(StorageError):
    """Packing the git repository's loose objects failed (git missing, disk full)."""


__all__ = [
    "CommitError",
    "IssueNotFoundError",
    "IssueRecordError",
    "PackError",
    "TrackerUnavailableError",
]
