"""Checking the arguments of tracker changes: titles, priorities, labels, updatable fields."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cortexgraph.storage.beads.schema import ISSUE_TYPES, STATUSES
from cortexgraph.storage.errors import InvalidInputError

TEXT_FIELDS = ("title", "description", "design", "acceptance_criteria", "notes")
UPDATABLE = frozenset(
    {*TEXT_FIELDS, "status", "priority", "issue_type", "assignee", "labels", "metadata"}
)


def check_title(title: Any) -> str:
    title = (title or "").strip() if isinstance(title, str) or title is None else title
    if not isinstance(title, str) or not title or len(title) > 500:
        raise InvalidInputError("an issue title must be 1-500 characters")
    return title


def check_priority(priority: Any) -> None:
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 4:
        raise InvalidInputError(f"priority must be an integer 0-4, got {priority!r}")


def clean_labels(labels: Sequence[str]) -> tuple[str, ...]:
    if isinstance(labels, str):
        raise InvalidInputError("labels must be a list of strings, not one string")
    return tuple(dict.fromkeys(str(x).strip() for x in labels if str(x).strip()))


def validated(changes: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in changes.items():
        if key == "title":
            out[key] = check_title(value)
        elif key in TEXT_FIELDS:
            if not isinstance(value, str):
                raise InvalidInputError(f"{key} must be a string")
            out[key] = value
        elif key == "status":
            if value not in STATUSES:
                raise InvalidInputError(f"status must be one of {STATUSES}, got {value!r}")
            out[key] = value
        elif key == "priority":
            check_priority(value)
            out[key] = value
        elif key == "issue_type":
            if value not in ISSUE_TYPES:
                raise InvalidInputError(f"issue_type must be one of {ISSUE_TYPES}")
            out[key] = value
        elif key == "assignee":
            out[key] = value or None
        elif key == "labels":
            out[key] = clean_labels(value)
        elif key == "metadata":
            if not isinstance(value, Mapping):
                raise InvalidInputError("metadata must be a mapping")
            out[key] = dict(value)
    return out


__all__ = ["UPDATABLE", "check_priority", "check_title", "clean_labels", "validated"]
