"""stdio transport: the SDK's, plus an answer to every line the SDK cannot parse.

The SDK's stdio reader turns a line it cannot parse (a lone surrogate such as ``"\\ud800"``,
JSON nested 200 levels or more, a JSON value that is no JSON-RPC message) into an exception on
the read stream, and the server drops it: the client never hears back and waits forever.
``ParseErrorReplies`` sits between the two and answers such a line with a JSON-RPC error
(-32700 parse error, -32600 invalid request), carrying the request's id when the line still
yields one, so the waiting call fails at once instead of hanging.
"""

from __future__ import annotations

import json
import logging
from types import TracebackType
from typing import Any

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

log = logging.getLogger("cortexgraph.mcp")

MAX_REASON_CHARS = 300


def request_id(raw: Any) -> tuple[bool, str | int | None]:
    """(does the line want an answer, its id). A notification (no id) gets none."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            return True, None  # not JSON at all: JSON-RPC answers with a null id
    if not isinstance(raw, dict):
        return True, None
    if "id" not in raw:
        return "method" not in raw, None
    rid = raw["id"]
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        return True, None
    if isinstance(rid, str):
        try:
            rid.encode("utf-8")
        except UnicodeEncodeError:
            return True, None
    return True, rid


def error_reply(exc: Exception) -> JSONRPCError | None:
    """The JSON-RPC error answering the line behind ``exc`` (None for a notification)."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    # The whole message when an error holds it (a union's "missing result" does), not the
    # part one branch choked on: params sent as a string still leaves the id readable.
    whole = [e["input"] for e in errors if isinstance(e.get("input"), dict)]
    raw = whole[0] if whole else (errors[0].get("input") if errors else None)
    invalid_json = any(e.get("type") == "json_invalid" for e in errors)
    wanted, rid = request_id(raw)
    if not wanted:
        return None
    if invalid_json or not errors:
        code, what = PARSE_ERROR, "Parse error"
        reason = (
            errors[0]["msg"] if errors else type(exc).__name__
        ) + " (send UTF-8 JSON without lone surrogates, nested fewer than 200 levels)"
    else:
        code, what = INVALID_REQUEST, "Invalid request"
        reason = "not a JSON-RPC 2.0 request, notification or response"
    reason = reason if len(reason) <= MAX_REASON_CHARS else reason[:MAX_REASON_CHARS] + "\u2026"
    return JSONRPCError(
        jsonrpc="2.0", id=rid, error=ErrorData(code=code, message=f"{what}: {reason}")
    )


class ParseErrorReplies:
    """A read stream (the SDK's ``ReadStream`` protocol) that answers what it cannot pass on."""

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self._inner = inner
        self._write = write_stream

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            reply = error_reply(item)
            log.info(
                "cortexgraph: unreadable message on stdin (%s)",
                reply.error.message if reply else "a notification",
            )
            if reply is not None:
                await self._write.send(SessionMessage(reply))

    def __aiter__(self) -> ParseErrorReplies:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> ParseErrorReplies:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def serve_stdio(server: Any) -> None:
    """Serve ``server`` (an MCPServer) over stdin/stdout, answering unparseable lines."""
    lowlevel = getattr(server, "_lowlevel_server", None)  # the SDK has no public accessor
    if lowlevel is None:  # a future SDK: serve as it does, without the parse-error answers
        await server.run_stdio_async()
        return
    async with stdio_server() as (read_stream, write_stream):
        await lowlevel.run(
            ParseErrorReplies(read_stream, write_stream),
            write_stream,
            lowlevel.create_initialization_options(),
        )


def run_stdio(server: Any) -> None:
    anyio.run(serve_stdio, server)


__all__ = ["ParseErrorReplies", "error_reply", "request_id", "run_stdio", "serve_stdio"]
