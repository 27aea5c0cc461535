"""The server's side of the recall endpoint (cortexgraph.recall_endpoint): search for hooks.

Started by the lifespan beside the MCP transport, so a Claude Code hook on this machine gets
``search_memory``'s ranking (BM25 fused with the warm dense index) instead of keywords alone.
Each request runs in a worker thread, as a sync MCP tool does, against the same open store.
"""

from __future__ import annotations

import contextlib
import logging
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from cortexgraph.mcp_server.errors import DependencyUnavailableError
from cortexgraph.recall_endpoint import (
    MAX_REQUEST_BYTES,
    SearchRequest,
    claim,
    encode,
    endpoint_path,
    parse_request,
)
from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.storage.models import MemoryStatus

if TYPE_CHECKING:
    from cortexgraph.mcp_server.state import ServerState

log = logging.getLogger("cortexgraph.mcp")
REQUEST_TIMEOUT_S = 5.0  # a client that sends nothing is dropped, never held


def search(state: ServerState, request: SearchRequest) -> dict[str, Any]:
    """``search_memory``'s ranking with its defaults (active memories, embeddings when on)."""
    store = state.store
    embeddings = "used" if store.dense is not None else "off"
    try:
        results = store.search(request.query, top_k=request.top_k, status=MemoryStatus.ACTIVE)
    except DependencyUnavailableError:
        embeddings = "unavailable; ranked by BM25 only"
        results = store.search(
            request.query, top_k=request.top_k, status=MemoryStatus.ACTIVE, use_embeddings=False
        )
    return {
        "results": [{"memory": r.memory.shown_json(), "score": round(r.score, 6)} for r in results],
        "embeddings": embeddings,
    }


async def _answer(state: ServerState, client: SocketStream) -> None:
    async with client:
        try:
            with anyio.fail_after(REQUEST_TIMEOUT_S):
                line = await BufferedByteReceiveStream(client).receive_until(
                    b"\n", MAX_REQUEST_BYTES
                )
                request = parse_request(line)
                reply = await anyio.to_thread.run_sync(search, state, request)
            await client.send(encode(reply))
        except CortexGraphError as exc:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await client.send(encode({"error": str(exc)}))
        except (TimeoutError, anyio.IncompleteRead, anyio.DelimiterNotFound, OSError) as exc:
            log.debug("cortexgraph: recall endpoint dropped a client: %r", exc)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the hook gave up waiting; nothing to tell it


async def serve_recall_endpoint(
    state: ServerState,
    *,
    task_status: anyio.abc.TaskStatus[Path | None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Listen until cancelled. Reports the socket path (None when there is none) once bound."""
    path = endpoint_path(state.settings.storage_path) if state.settings.recall_endpoint else None
    if path is None or not claim(path):
        if path is not None:
            log.info("cortexgraph: another server answers hooks for this store at %s", path)
        task_status.started(None)
        return
    try:
        listener = await anyio.create_unix_listener(path, mode=0o600)
    except OSError as exc:  # e.g. a filesystem without sockets: hooks keep their own search
        log.warning("cortexgraph: no recall endpoint for hooks (%s)", exc)
        task_status.started(None)
        return
    inode = path.stat().st_ino
    task_status.started(path)
    try:
        async with listener:
            await listener.serve(partial(_answer, state))
    finally:
        with contextlib.suppress(OSError):
            if path.stat().st_ino == inode:  # still ours, not a newer server's
                path.unlink()


__all__ = ["search", "serve_recall_endpoint"]
