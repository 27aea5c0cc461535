"""The server's side of the recall endpoint (cortexgraph.recall_endpoint): search for hooks.

Started by the lifespan beside the MCP transport, so a Claude Code hook on this machine gets
``search_unified``'s ranking (BM25 fused with the warm dense index, the vault's notes beside the
memories) instead of keywords alone.
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
    NOTE_TEXT_CHARS,
    SearchRequest,
    claim,
    encode,
    endpoint_path,
    parse_request,
)
from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.storage.models import Memory
from cortexgraph.vault_sync.note_body import reading_text

if TYPE_CHECKING:
    from cortexgraph.mcp_server.state import ServerState
    from cortexgraph.storage import JSONLStore
    from cortexgraph.vault_sync.ltm_index import LTMIndex
    from cortexgraph.vault_sync.unified_search import UnifiedResult

log = logging.getLogger("cortexgraph.mcp")
REQUEST_TIMEOUT_S = 5.0  # a client that sends nothing is dropped, never held
VAULT_WAIT_S = 0.5  # of the hook's 1 s (cortexgraph.recall_endpoint.DEFAULT_TIMEOUT_S)


def search(state: ServerState, request: SearchRequest) -> dict[str, Any]:
    """``search_unified``'s ranking with the configured weights: active and promoted memories
    (a promoted one ranks as its memory, with its note's words; by the note's own words too
    when a person added some), and notes a person wrote in the vault at ``ltm_weight``. Archived memories stay out (``archive_weight`` 0), as they do from
    ``search_memory``: recall before every prompt is the working set. The vault side ranks by
    keywords: embedding a whole vault on a first prompt would outlast the hook's wait."""
    store = state.store
    # Only changed notes are re-read. A tool call that holds the vault longer (a first vault
    # embedding) would outlast the hook's wait: the hook gets the memories without notes.
    with state.fresh_ltm_index(wait_s=VAULT_WAIT_S) as index:
        return _search(state, store, index, request)


def _search(
    state: ServerState, store: JSONLStore, index: LTMIndex | None, request: SearchRequest
) -> dict[str, Any]:
    from cortexgraph.vault_sync.unified_search import search_unified

    weights = state.settings.unified_search_weights()
    weights["archive_weight"] = 0.0
    memories_only = not state.settings.recall_vault_notes  # CORTEXGRAPH_RECALL_VAULT_NOTES

    def run(use_embeddings: bool | None) -> list[UnifiedResult]:
        found = search_unified(
            store,
            index,
            request.query,
            # without notes a person wrote, room for what they would have taken
            limit=request.top_k * (3 if memories_only else 1),
            use_embeddings=use_embeddings,
            **weights,
        )
        if memories_only:
            found = [r for r in found if r.memory_id is not None][: request.top_k]
        return found

    embeddings = "used" if store.dense is not None else "off"
    try:
        results = run(None)
    except DependencyUnavailableError:
        embeddings = "unavailable; ranked by BM25 only"
        results = run(False)
    ids = [r.memory_id for r in results if r.memory_id is not None]
    memories = {m.id: m for m in store.find_many(ids)}
    return {"results": [_reply_item(r, memories, index) for r in results], "embeddings": embeddings}


def _reply_item(
    result: UnifiedResult, memories: dict[str, Memory], index: LTMIndex | None
) -> dict[str, Any]:
    item: dict[str, Any] = {"score": round(result.score, 6)}
    memory = memories.get(result.memory_id) if result.memory_id is not None else None
    if memory is not None:
        item["memory"] = memory.shown_json()
    note = index.get(result.note_path) if index is not None and result.note_path else None
    if note is not None:
        # The start of the note is enough (NOTE_TEXT_CHARS): 4x of it leaves room for the
        # markup reading_text removes, without reading a whole 1 MB note on every prompt.
        head = note.content[: 4 * NOTE_TEXT_CHARS]
        text = reading_text(head, title=note.title)[:NOTE_TEXT_CHARS]
        item["note"] = {"path": note.path, "title": note.title, "text": text}
    return item


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
