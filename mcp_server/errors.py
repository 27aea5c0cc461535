"""Translating cortexgraph's typed errors into MCP error results (the edge does this, no one else).

The SDK shows the model only "Error executing tool X" for an exception that is not a
``ToolError``; ours carry text that says what to fix, so every tool is wrapped to re-raise them
as ``ToolError`` with that text.

No error echoes a huge input: messages built here quote a short prefix (``quote``), and
``clip_errors`` (server middleware) cuts every error text that leaves the server, the SDK's own
("Unknown tool: <1 MB name>", pydantic's lists of failures) included.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from mcp.server.context import CallNext, HandlerResult
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent

from cortexgraph.storage.errors import (
    CortexGraphError,
    InvalidInputError,
    NotFoundError,
    StorageError,
)

log = logging.getLogger("cortexgraph.mcp")

P = ParamSpec("P")
R = TypeVar("R")

QUOTE_CHARS = 80  # how much of a bad value an error message repeats
MAX_ERROR_CHARS = 2_000  # the longest error text the server sends
MAX_TOOL_NAME_CHARS = 128  # MCP tool names are at most 128 characters


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)``, or its first ``limit`` characters and the full length."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return repr(value)
    return f"{text[:limit]!r}… ({len(text):,} chars)"


def clip(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """An error text cut to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} chars)"


class DependencyUnavailableError(CortexGraphError):
    """A tool needs a component (vault, tracker, model) that this install cannot provide."""


def describe(exc: BaseException) -> str:
    return clip(_describe(exc))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, InvalidInputError):
        return f"Invalid input: {exc}"
    if isinstance(exc, NotFoundError):
        return f"Not found: {exc}. Use search_memory or read_graph to find valid ids."
    if isinstance(exc, StorageError):
        return f"Storage error: {exc}"
    if isinstance(exc, DependencyUnavailableError):
        return f"Unavailable: {exc}"
    return f"{type(exc).__name__}: {exc}"


def tool_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap a tool so typed errors reach the model as readable error results (and check that
    every string argument is valid text before the tool runs)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from cortexgraph.mcp_server.arguments import check_values

        try:
            check_values(kwargs)
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except CortexGraphError as exc:
            raise ToolError(describe(exc)) from exc

    return wrapper


class ClipLogRecords(logging.Filter):
    """A log handler filter: a record quoting a huge input is cut (the SDK logs error texts)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if len(message) > MAX_ERROR_CHARS:
            record.msg, record.args = clip(message), None
        return True


async def clip_errors(ctx: Any, call_next: CallNext) -> HandlerResult:
    """Server middleware: every error text leaving the server is at most MAX_ERROR_CHARS."""
    name = (ctx.params or {}).get("name") if ctx.method == "tools/call" else None
    if isinstance(name, str) and len(name) > MAX_TOOL_NAME_CHARS:  # the SDK would echo it whole
        return CallToolResult(
            content=[TextContent(type="text", text=f"Unknown tool: {quote(name)}")], is_error=True
        )
    try:
        result = await call_next(ctx)
    except MCPError as exc:
        exc.error.message = clip(exc.error.message)
        if isinstance(exc.error.data, dict):
            exc.error.data = {
                k: clip(v, QUOTE_CHARS) if isinstance(v, str) else v
                for k, v in exc.error.data.items()
            }
        raise
    if isinstance(result, CallToolResult) and result.is_error:
        parts = [
            c.model_copy(update={"text": clip(c.text)}) if isinstance(c, TextContent) else c
            for c in result.content
        ]
        return result.model_copy(update={"content": parts})
    if (
        isinstance(result, dict)
        and result.get("isError")
        and isinstance(result.get("content"), list)
    ):
        clipped = [
            {**c, "text": clip(c["text"])}
            if isinstance(c, dict) and isinstance(c.get("text"), str)
            else c
            for c in result["content"]
        ]
        return {**result, "content": clipped}
    return result


__all__ = [
    "MAX_ERROR_CHARS",
    "QUOTE_CHARS",
    "ClipLogRecords",
    "DependencyUnavailableError",
    "clip",
    "clip_errors",
    "describe",
    "quote",
    "tool_errors",
]
