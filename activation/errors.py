"""Errors of the activation layer (callers mostly see none: components degrade instead)."""

from __future__ import annotations

from cortexgraph.storage.errors import CortexGraphError


class ActivationError(CortexGraphError):
    """Base class for activation failures."""


class ClassifierArtefactError(ActivationError):
    """The shipped intent classifier file is missing, unreadable or inconsistent."""


__all__ = ["ActivationError", "ClassifierArtefactError"]
