"""Conversational activation: should this message be saved, or the past recalled?

Backed by the ``activation`` package, whose models (spaCy, MiniLM) load on first use only;
a save's enrichment is ``activation.enrich_for_save``, called by ``save_memory``.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from cortexgraph import activation
from cortexgraph.mcp_server.errors import tool_errors
from cortexgraph.mcp_server.state import ServerContext, ServerState, state_of

Message = Annotated[
    str, Field(description="The user's message, verbatim.", min_length=1, max_length=20_000)
]


def _as_dict(result: Any) -> dict[str, Any]:
    if hasattr(result, "to_json"):
        return result.to_json()
    if hasattr(result, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(result)
    return dict(result)


SessionId = Annotated[
    str | None,
    Field(
        description="A stable id for this conversation; omit to use this connection's.",
        max_length=128,
    ),
]


def _conversation(
    ctx: ServerContext, state: ServerState, session_id: str | None
) -> tuple[Any, str]:
    """The server's ConversationContext (CORTEXGRAPH_CONTEXT_WINDOW_SIZE turns per session) and
    this conversation's key: the one given, else the HTTP transport's session id, else one
    window for the process (stdio serves one client)."""
    window = state.conversations
    headers = getattr(ctx, "headers", None) or {}
    return window, session_id or headers.get("mcp-session-id") or "stdio"


def _remember_turn(window: Any, message: str, session: str) -> None:
    turns = window.turns(session)
    if not turns or turns[-1].text != message:  # both analyze tools may see the same message
        window.add(message, session_id=session)


@tool_errors
def analyze_message(
    ctx: ServerContext,
    message: Message,
    include_dedup_check: Annotated[
        bool,
        Field(description="Also look for a memory that already says this (DUPLICATE_DETECTED)."),
    ] = True,
    session_id: SessionId = None,
) -> dict[str, Any]:
    """Call before deciding to save: is this user message worth remembering? Returns
    action_recommendation MUST_SAVE (explicit request: save it), SHOULD_SAVE (save it, usually),
    DUPLICATE_DETECTED (update the memory named in deduplication instead), SHOULD_SEARCH (call
    search_memory first) or NONE; intent (e.g. SAVE_PREFERENCE) with its confidence; and
    suggested_entities / suggested_tags / suggested_strength to pass to save_memory. Short
    follow-ups ("yes, do that") are read with this conversation's previous messages."""
    state = state_of(ctx)
    config = activation.ActivationConfig.from_mapping(state.settings)
    window, session = _conversation(ctx, state, session_id)
    result = activation.analyze_message(
        message,
        store=state.store if include_dedup_check else None,
        context=window,
        config=config,
        session_id=session,
    )
    _remember_turn(window, message, session)
    return {"success": True, **_as_dict(result)}


@tool_errors
def analyze_for_recall(
    ctx: ServerContext, message: Message, session_id: SessionId = None
) -> dict[str, Any]:
    """Call before answering a question that may concern the past ("what did we decide about
    ...?", "continue with ..."): should_search says whether to call search_memory, with a
    suggested_query and entities. Follow-ups are read with this conversation's messages."""
    state = state_of(ctx)
    config = activation.ActivationConfig.from_mapping(state.settings)
    window, session = _conversation(ctx, state, session_id)
    result = activation.analyze_for_recall(
        message, context=window, config=config, session_id=session
    )
    _remember_turn(window, message, session)
    return {"success": True, **_as_dict(result)}


def register(server: MCPServer[ServerState], state: ServerState) -> None:
    """Add this module's tools (their handlers reach the state through their ctx)."""
    read_only = ToolAnnotations(read_only_hint=True)
    server.add_tool(analyze_message, annotations=read_only)
    server.add_tool(analyze_for_recall, annotations=read_only)


__all__ = ["analyze_for_recall", "analyze_message", "register"]
