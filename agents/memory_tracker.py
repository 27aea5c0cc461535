"""Where the in-memory issue tracker used to live: it is in storage.beads.memory_tracker now,
beside the real tracker and with its statuses. These names keep older imports working."""

from __future__ import annotations

from cortexgraph.storage.beads.memory_tracker import InMemoryIssueTracker, TrackedIssue
from cortexgraph.storage.beads.schema import DEDUPE_KEY, STATUSES

__all__ = ["DEDUPE_KEY", "STATUSES", "InMemoryIssueTracker", "TrackedIssue"]
