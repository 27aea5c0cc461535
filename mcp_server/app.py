"""The server object: settings read once, the store opened once, tools registered.

The state (``mcp_server/state.py``) opens the store in a background thread when the lifespan
starts, so ``initialize`` and ``tools/list`` never wait for a large store to load; the first
tool that needs it waits. This module imports the tool modules; none of them imports it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

from cortexgraph.mcp_server.entity_reading import stop_entity_reading
from cortexgraph.mcp_server.recall_endpoint import serve_recall_endpoint
from cortexgraph.mcp_server.snapshot_upkeep import keep_snapshots_fresh
from cortexgraph.mcp_server.state import ServerContext, ServerState, state_of
from cortexgraph.settings import Settings

INSTRUCTIONS = (
    "cortexgraph is your temporal memory. Memories fade unless used. Search before answering "
    "questions about the user's past decisions, preferences or projects (search_memory, or "
    "search_unified to include the long-term vault); save durable facts, decisions and "
    "preferences with save_memory; after using a memory in an answer call observe_memory_usage "
    "so it is reinforced. When unsure whether a message is worth saving, call analyze_message: "
    "its action_recommendation is MUST_SAVE (the user asked: always save), SHOULD_SAVE (usually "
    "save, with its suggested entities, tags and strength), DUPLICATE_DETECTED (update the "
    "existing memory), SHOULD_SEARCH (search first) or NONE. Before answering a question about "
    "the past, analyze_for_recall says whether to search and with which query."
)


@dataclass(frozen=True, slots=True)
class ServerApp:
    """The registered server and the state its lifespan yields (for the runners and tests)."""

    server: MCPServer[ServerState]
    state: ServerState


def build_server(settings: Settings | None = None) -> MCPServer[ServerState]:
    """A fully registered server. ``settings`` defaults to the environment, read now."""
    return build_app(settings).server


def build_app(settings: Settings | None = None) -> ServerApp:
    """The server and its state. Tools reach the state through the lifespan (``state_of``);
    every module's ``register(server, state)`` is handed it too, for the static resources and
    the middleware, which get no ``ctx``."""
    settings = settings or Settings()
    state = ServerState(settings)

    @asynccontextmanager
    async def lifespan(_: MCPServer[ServerState]) -> AsyncIterator[ServerState]:
        state.open_in_background()
        try:
            async with anyio.create_task_group() as background:
                # Claude Code hooks ask this server's search (mcp_server/recall_endpoint.py).
                await background.start(serve_recall_endpoint, state)
                # The store's snapshots, refreshed once writes settle (snapshot_upkeep.py).
                await background.start(keep_snapshots_fresh, state)
                yield state
                background.cancel_scope.cancel()  # a refresh in progress is let finish
        finally:
            stop_entity_reading(state)  # a child reading entities: stopped, none started again
            state.save_embeddings()

    from cortexgraph import __version__ as server_version

    server: MCPServer[ServerState] = MCPServer(
        "cortexgraph",
        version=server_version,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level=_level(settings.log_level),
        subscriptions=state.subscriptions,
    )
    from cortexgraph.mcp_server import (
        resources,
        tools_activation,
        tools_consolidation,
        tools_context,
        tools_gc,
        tools_lifecycle,
        tools_ltm,
        tools_monitor,
        tools_pipeline,
        tools_save,
        tools_search,
        tools_undo,
    )

    # Each module registers its own tools, resources and prompts, handed the state (the tool
    # handlers reach it through their ctx; resources and middleware get none). The order is
    # the order of tools/list and resources/list.
    tools_save.register(server, state)
    tools_search.register(server, state)
    tools_gc.register(server, state)
    tools_ltm.register(server, state)
    tools_activation.register(server, state)
    tools_consolidation.register(server, state)  # one cluster at a time
    tools_pipeline.register(server, state)  # the whole pipeline, its issues
    tools_context.register(server, state)
    tools_lifecycle.register(server, state)  # its middleware records the session's calls
    resources.register(server, state)
    tools_monitor.register(server, state)  # behaviour monitor (activation.monitor)
    tools_undo.register(server, state)  # undo and history (agents.undo, agents.history)
    from cortexgraph.mcp_server.errors import clip_errors

    server.middleware.append(clip_errors)  # no error text echoes a huge input
    return ServerApp(server, state)


def _level(name: str) -> Any:
    name = name.upper()
    return name if name in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"} else "INFO"


__all__ = [
    "INSTRUCTIONS",
    "ServerApp",
    "ServerContext",
    "ServerState",
    "build_app",
    "build_server",
    "state_of",
]
