"""Undo and history tools: reverse what the consolidation agents did, and see what happened.

The same functions as `cortexgraph undo|unarchive|unpromote|history` (agents.undo,
agents.history, vault_sync.unpromote); this module only reads arguments and shapes answers.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from cortexgraph.mcp_server.collaborators import issue_tracker
from cortexgraph.mcp_server.errors import tool_errors
from cortexgraph.mcp_server.state import ServerContext, ServerState, state_of
from cortexgraph.retrieval.core import resolve_memory_id
from cortexgraph.storage.graveyard import Graveyard

CAUSE = "undo_consolidation (MCP)"


@tool_errors
def undo_consolidation(
    ctx: ServerContext,
    action: Annotated[
        Literal["merge", "archive", "promote", "gc"],
        Field(
            description=(
                "What to reverse: 'merge' (memory_id is the merged memory: its sources come back), "
                "'archive' (make an archived memory active), 'promote' (move its note to the vault's "
                ".trash/ and make it short-term again), 'gc' (bring back what garbage collection "
                "archived or deleted)."
            )
        ),
    ],
    memory_id: Annotated[
        str,
        Field(
            description=(
                "The memory the change was made to (see memory_history): its full id or a "
                "unique prefix of 8+ characters."
            ),
            max_length=200,
        ),
    ],
) -> dict[str, Any]:
    """Reverse one automatic change the consolidation agents made to a memory."""
    state = state_of(ctx)
    store, now = state.store, time.time()
    buried = Graveyard(state.settings.storage_path).entries() if action == "gc" else ()
    memory_id = resolve_memory_id(store, memory_id, also=buried)
    if action == "merge":
        from cortexgraph.agents.undo import undo_merge_of

        result = undo_merge_of(store, memory_id, now=now, cause=CAUSE).to_json()
    elif action == "archive":
        from cortexgraph.agents.undo import unarchive

        result = unarchive(store, memory_id, now=now, cause=CAUSE).to_json()
    elif action == "gc":
        from cortexgraph.agents.undo import restore_collected

        result = restore_collected(
            store, Graveyard(state.settings.storage_path), memory_id, now=now, cause=CAUSE
        ).to_json()
    else:
        from cortexgraph.vault_sync.unpromote import unpromote_memory

        s = state.settings
        done = unpromote_memory(
            store, s.vault_path, memory_id, folder=s.ltm_promoted_folder, now=now, cause=CAUSE
        )
        result = done.as_undo()
    return {"success": True, **result}


@tool_errors
def memory_history(
    ctx: ServerContext,
    memory_id: Annotated[
        str,
        Field(
            description="The memory whose changes to list: its full id or a unique prefix of 8+ "
            "characters.",
            max_length=200,
        ),
    ],
) -> dict[str, Any]:
    """Every change to a memory (saved, touched, merged, promoted, superseded, archived,
    undone) with its time and cause, from the store, garbage collection and the issue log."""
    from cortexgraph.agents.history import history_of_ref

    state = state_of(ctx)
    store, graveyard = state.store, Graveyard(state.settings.storage_path)
    buried = graveyard.entries()
    tracker, _ = issue_tracker(state, create=False)
    memory_id, events = history_of_ref(
        store,
        memory_id,
        lambda ref: resolve_memory_id(store, ref, also=buried),
        tracker=tracker,
        graveyard=graveyard,
    )
    return {"success": True, "memory_id": memory_id, "events": [e.to_json() for e in events]}


def register(server: MCPServer[ServerState], state: ServerState) -> None:
    """Add this module's tools (their handlers reach the state through their ctx)."""
    server.add_tool(undo_consolidation, annotations=ToolAnnotations(destructive_hint=False))
    server.add_tool(memory_history, annotations=ToolAnnotations(read_only_hint=True))


__all__ = ["memory_history", "register", "undo_consolidation"]
