"""Errors of the behaviour monitor."""

from __future__ import annotations

from cortexgraph.storage.errors import CortexGraphError, InvalidInputError, StorageError


class MonitorError(CortexGraphError):
    """Base class for behaviour-monitor failures."""


class PatternConfigError(MonitorError, InvalidInputError):
    """A pattern declaration (shipped or the user's YAML) cannot be used; says what to fix."""


class SessionLockedError(MonitorError, StorageError):
    """A session's log is held by another process past the wait: its files cannot be used
    now (a storage error to the edges, as the store's own lock is)."""


__all__ = ["MonitorError", "PatternConfigError", "SessionLockedError"]
