"""Translating cortexgraph's typed errors into MCP error results (the edge does this, no one else).

The SDK shows the model only "Error executing tool X" for an exception that is not a
``ToolError``; ours carry text that says what to fix, so every tool is wrapped to re-raise them
as ``ToolError`` with that text.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError

from storage.errors import (
    CortexGraphError,
    InvalidInputError,
    NotFoundError,
    StorageError,
)

log = logging.getLogger("cortexgraph.mcp")

F = TypeVar("F", bound=Callable[..., Any])


class DependencyUnavailableError(CortexGraphError):
    """A tool needs a component (vault, tracker, model) that this install cannot provide."""


def describe(exc: BaseException) -> str:
    if isinstance(exc, InvalidInputError):
        return f"Invalid input: {exc}"
    if isinstance(exc, NotFoundError):
        return f"Not found: {exc}. Use search_memory or read_graph to find valid ids."
    if isinstance(exc, StorageError):
        return f"Storage error: {exc}"
    if isinstance(exc, DependencyUnavailableError):
        return f"Unavailable: {exc}"
    return f"{type(exc).__name__}: {exc}"


def tool_errors(fn: F) -> F:
    """Wrap a tool so typed errors reach the model as readable error results."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except CortexGraphError as exc:
            raise ToolError(describe(exc)) from exc

    return wrapper  # type: ignore[return-value]


__all__ = ["DependencyUnavailableError", "describe", "tool_errors"]
