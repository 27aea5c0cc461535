"""Conversational activation: should this message be saved / recalled, and save-time enrichment.

Backed by the ``activation`` package (spaCy, KeyBERT), imported on first use only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from cortexgraph.mcp_server.app import ServerState, state_of
from cortexgraph.mcp_server.errors import DependencyUnavailableError, tool_errors
from cortexgraph.mcp_server.wiring import optional_module

log = logging.getLogger("cortexgraph.mcp")

Message = Annotated[
    str, Field(description="The user's message, verbatim.", min_length=1, max_length=20_000)
]


@dataclass(frozen=True, slots=True)
class Enrichment:
    tags: tuple[str, ...]
    entities: tuple[str, ...]
    strength: float
    label: str  # what was filled in automatically, or why nothing was
    applied: tuple[str, ...] = ()  # which of entities / tags / strength were filled


def _as_dict(result: Any) -> dict[str, Any]:
    if hasattr(result, "to_json"):
        return result.to_json()
    if hasattr(result, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(result)
    return dict(result)


def enrich(
    state: ServerState,
    content: str,
    tags: tuple[str, ...] | None,
    entities: list[str] | None,
    strength: float | None,
) -> Enrichment:
    """Fill in what the caller left out (None), when activation is available. An explicit
    empty list is kept: ``entities=[]`` means "no entities", not "find them for me"."""
    given_tags = tags or ()
    given_entities = tuple(entities or ())
    if tags is not None and entities is not None and strength is not None:
        return Enrichment(
            given_tags, given_entities, strength, "none needed (tags, entities and strength given)"
        )
    if not state.settings.enable_preprocessing:
        return Enrichment(
            given_tags,
            given_entities,
            1.0 if strength is None else strength,
            "off (CORTEXGRAPH_ENABLE_PREPROCESSING=false)",
        )
    try:
        activation = optional_module(
            "cortexgraph.activation", "automatic entities and strength", "enrich_for_save"
        )
        enriched = activation.enrich_for_save(
            content,
            tags=None if tags is None else list(tags),
            entities=entities,
            strength=strength,
            store=state.store,
            config=activation.ActivationConfig.from_mapping(state.settings),
        )
    except DependencyUnavailableError as exc:
        log.info("cortexgraph: saving without enrichment: %s", exc)
        return Enrichment(
            given_tags, given_entities, 1.0 if strength is None else strength, f"unavailable: {exc}"
        )
    applied = tuple(enriched.enrichment_applied)
    return Enrichment(
        tuple(enriched.tags),
        tuple(enriched.entities),
        1.0 if enriched.strength is None else float(enriched.strength),
        "filled " + ", ".join(applied) if applied else "nothing to fill",
        applied,
    )


SessionId = Annotated[
    str | None,
    Field(
        description="A stable id for this conversation; omit to use this connection's.",
        max_length=128,
    ),
]


def _conversation(
    ctx: Context, state: ServerState, config: Any, session_id: str | None
) -> tuple[Any, str]:
    """The server's ConversationContext (CORTEXGRAPH_CONTEXT_WINDOW_SIZE turns per session) and
    this conversation's key: the one given, else the HTTP transport's session id, else one
    window for the process (stdio serves one client)."""
    from cortexgraph.activation.context import ConversationContext

    window = state.service(
        "conversation-context", lambda: ConversationContext(max_turns=config.context_turns)
    )
    headers = getattr(ctx, "headers", None) or {}
    return window, session_id or headers.get("mcp-session-id") or "stdio"


def _remember_turn(window: Any, message: str, session: str) -> None:
    turns = window.turns(session)
    if not turns or turns[-1].text != message:  # both analyze tools may see the same message
        window.add(message, session_id=session)


@tool_errors
def analyze_message(
    ctx: Context,
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
    activation = optional_module("cortexgraph.activation", "analyze_message", "analyze_message")
    state = state_of(ctx)
    config = activation.ActivationConfig.from_mapping(state.settings)
    window, session = _conversation(ctx, state, config, session_id)
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
    ctx: Context, message: Message, session_id: SessionId = None
) -> dict[str, Any]:
    """Call before answering a question that may concern the past ("what did we decide about
    ...?", "continue with ..."): should_search says whether to call search_memory, with a
    suggested_query and entities. Follow-ups are read with this conversation's messages."""
    activation = optional_module(
        "cortexgraph.activation", "analyze_for_recall", "analyze_for_recall"
    )
    state = state_of(ctx)
    config = activation.ActivationConfig.from_mapping(state.settings)
    window, session = _conversation(ctx, state, config, session_id)
    result = activation.analyze_for_recall(
        message, context=window, config=config, session_id=session
    )
    _remember_turn(window, message, session)
    return {"success": True, **_as_dict(result)}


def register(server: MCPServer) -> None:
    read_only = ToolAnnotations(read_only_hint=True)
    server.add_tool(analyze_message, annotations=read_only)
    server.add_tool(analyze_for_recall, annotations=read_only)


__all__ = ["Enrichment", "analyze_for_recall", "analyze_message", "enrich", "register"]
