"""Errors of the behaviour monitor."""

from __future__ import annotations

from cortexgraph.storage.errors import CortexGraphError, InvalidInputError


class MonitorError(CortexGraphError):
    """Base class for behaviour-monitor failures."""


class PatternConfigError(MonitorError, InvalidInputError):
    """A pattern declaration (shipped or the user's YAML) cannot be used; says what to fix."""


__all__ = ["MonitorError", "PatternConfigError"]
