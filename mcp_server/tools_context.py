"""Context tools: memory_retrieve, graph_query, core memory, temporal truth, fact prompts.

The logic lives in ``retrieval``; this module reads settings, finds the vault and the update
intent (activation), and translates errors. LatentContext's shapes (its memory types, its
filters object, its memory_store tool) are read in ``context_seed``.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import replace
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp_types import ToolAnnotations
from pydantic import Field, StrictFloat, StrictInt

from cortexgraph.mcp_server.arguments import MAX_ID_CHARS, IdText, check_content, check_supersedes
from cortexgraph.mcp_server.collaborators import embedder_for
from cortexgraph.mcp_server.context_seed import SeedType, memory_store, merge_filters, seed_tiers
from cortexgraph.mcp_server.errors import DependencyUnavailableError, tool_errors
from cortexgraph.mcp_server.state import ServerContext, ServerState, state_of
from cortexgraph.retrieval import prompts
from cortexgraph.retrieval.context import RetrievalFilters
from cortexgraph.retrieval.context import memory_retrieve as retrieve
from cortexgraph.retrieval.core import core_memories, core_notes, resolve_memory_id, set_core
from cortexgraph.retrieval.forget import memory_forget as forget
from cortexgraph.retrieval.graph import graph_query as query_graph
from cortexgraph.retrieval.graph import memory_ref
from cortexgraph.retrieval.temporal import after_save
from cortexgraph.storage.errors import CortexGraphError, InvalidInputError

log = logging.getLogger("cortexgraph.mcp")

MemoryType = Literal["core", "ltm", "stm", "graph"]


@tool_errors
def memory_retrieve(
    ctx: ServerContext,
    query: Annotated[
        str,
        Field(description="What the context is for, in words.", min_length=1, max_length=10_000),
    ],
    token_budget: Annotated[
        StrictInt,
        Field(description="Most tokens to return (MiniLM WordPiece count).", ge=20, le=200_000),
    ] = 3000,
    memory_types: Annotated[
        list[MemoryType | SeedType] | None,
        Field(
            description="Tiers to draw from; default all: core, ltm, stm, graph. LatentContext's "
            "fact, preference, event, summary and working are read as the tiers holding them.",
            max_length=9,
        ),
    ] = None,
    after: Annotated[
        str | None, Field(description="Only items created on/after this ISO date.", max_length=64)
    ] = None,
    before: Annotated[
        str | None, Field(description="Only items created before this ISO date.", max_length=64)
    ] = None,
    min_confidence: Annotated[
        StrictFloat | None, Field(description="Composite score floor 0-1.", ge=0, le=1)
    ] = None,
    include_history: Annotated[
        bool,
        Field(
            description="Also show superseded facts, marked with the date they stopped being true."
        ),
    ] = False,
    use_embeddings: Annotated[
        bool,
        Field(
            description="Rank by semantic similarity too (loads an embedding model on first use)."
        ),
    ] = False,
    items: Annotated[
        bool, Field(description="Also list each item's full id, tier and score.")
    ] = False,
    filters: Annotated[
        dict[str, Any] | None,
        Field(
            description="LatentContext's form of the filters: {memory_types, after, before, "
            "min_confidence}, the same as the top-level arguments."
        ),
    ] = None,
) -> dict[str, Any]:
    """The smallest context that answers: core facts, long-term notes, short-term memories and
    graph facts, de-duplicated and packed into a token budget. Ids are 8-character prefixes
    (m:...) or note paths (n:...); every tool that takes a memory id takes the m: form as it
    is (touch_memory, open_memories, memory_history ...)."""
    state = state_of(ctx)
    given: dict[str, Any] = {"memory_types": memory_types, "after": after, "before": before}
    given["min_confidence"] = min_confidence
    given = merge_filters(given, filters)  # LatentContext's filters object
    given["memory_types"], read_as = seed_tiers(given["memory_types"])
    chosen = RetrievalFilters.from_mapping(given)
    embedder = embedder_for(state)[0] if use_embeddings else None
    with state.fresh_ltm_index() as index:
        kwargs: dict[str, Any] = {
            "filters": chosen,
            "ltm_index": index,
            "embedder": embedder,
            "include_history": include_history,
        }
        try:
            result = retrieve(
                state.store, query, token_budget, use_embeddings=use_embeddings, **kwargs
            )
        except DependencyUnavailableError as exc:
            result = retrieve(state.store, query, token_budget, use_embeddings=False, **kwargs)
            result = replace(
                result, notes=(*result.notes, f"embeddings unavailable ({exc}); BM25 only")
            )
    if read_as:
        result = replace(result, notes=(*result.notes, *read_as))
    return {"success": True, **result.to_json(items=items)}


@tool_errors
def graph_query(
    ctx: ServerContext,
    entity: Annotated[
        str,
        Field(
            description="A person, project, tool or place, e.g. 'postgres'.",
            min_length=1,
            max_length=200,
        ),
    ],
    relation: Annotated[
        str | None,
        Field(
            description="Only this predicate: related, causes, "
            "supports, contradicts, superseded_by, mentions, "
            "links_to ...",
            max_length=64,
        ),
    ] = None,
    depth: Annotated[StrictInt, Field(description="Hops from the entity (1-3).", ge=1, le=3)] = 1,
    max_triples: Annotated[
        StrictInt, Field(description="At most this many triples.", ge=1, le=500)
    ] = 100,
    format: Annotated[
        Literal["text", "json"], Field(description="Compact text lines or JSON.")
    ] = "text",
) -> dict[str, Any]:
    """Memories, notes and relations around an entity, as compact subject-predicate-object
    triples (memory relations, shared entities, vault wikilinks)."""
    state = state_of(ctx)
    with state.fresh_ltm_index() as index:
        result = query_graph(
            state.store,
            entity,
            relation=relation,
            depth=depth,
            ltm_index=index,
            max_triples=max_triples,
        )
    if format == "json":
        return {"success": True, **result.to_json()}
    return {
        "success": True,
        "found": result.found,
        "truncated": result.truncated,
        "graph": result.text(),
    }


@tool_errors
def set_core_memory(
    ctx: ServerContext,
    memory_id: Annotated[
        str, Field(description="A memory id or its 8+ character prefix.", max_length=MAX_ID_CHARS)
    ],
    core: Annotated[bool, Field(description="true: always in context; false: unmark.")] = True,
) -> dict[str, Any]:
    """Mark a memory as core: it is always included first by memory_retrieve, within its own
    share of the budget. (A vault note is core with `core: true` in its frontmatter.)"""
    memory = set_core(state_of(ctx).store, memory_id, core)
    return {"success": True, "memory_id": memory.id, "core": memory.is_core}


@tool_errors
def memory_forget(
    ctx: ServerContext,
    memory_id: Annotated[
        str, Field(description="A memory id or its 8+ character prefix.", max_length=MAX_ID_CHARS)
    ],
    action: Annotated[
        Literal["deprecate", "correct", "delete"],
        Field(
            description="deprecate: keep as history, no longer current; correct: save "
            "`correction` as the current fact (the old one becomes history); "
            "delete: remove it and its relations."
        ),
    ] = "deprecate",
    correction: Annotated[
        str | None, Field(description="The corrected fact (action=correct).", max_length=20_000)
    ] = None,
) -> dict[str, Any]:
    """Retire a memory that is no longer true, correct it, or delete it."""
    state = state_of(ctx)
    if correction is not None and action == "correct":
        check_content(correction, state.settings.max_content_bytes, "correction")
    outcome = forget(state.store, memory_id, action, correction, now=time.time())
    return {"success": True, **outcome.to_json()}


@tool_errors
def record_memory_update(
    ctx: ServerContext,
    memory_id: Annotated[
        str, Field(description="The memory just saved with save_memory.", max_length=MAX_ID_CHARS)
    ],
    supersedes: Annotated[
        list[IdText] | None,
        Field(
            description="Ids of the memories it replaces; omit to detect them (same entities and "
            "an update such as 'moved to', 'now use ... instead of').",
            max_length=50,
        ),
    ] = None,
) -> dict[str, Any]:
    """Temporal truth: older memories this one replaces are kept as history (superseded_by)."""
    state = state_of(ctx)
    memory = state.store.get(resolve_memory_id(state.store, memory_id))
    check_supersedes(state.store, memory, supersedes)  # all of them, before the first is changed
    update = after_save(
        state.store, memory, supersedes, auto_supersede=state.settings.auto_supersede
    )
    return {"success": True, "memory_id": memory.id, **update.to_json()}


def register(server: MCPServer[ServerState], state: ServerState) -> None:
    read_only = ToolAnnotations(read_only_hint=True)
    server.add_tool(memory_retrieve, annotations=read_only)
    server.add_tool(memory_store, annotations=ToolAnnotations(destructive_hint=False))
    server.add_tool(graph_query, annotations=read_only)
    server.add_tool(set_core_memory, annotations=ToolAnnotations(destructive_hint=False))
    server.add_tool(memory_forget, annotations=ToolAnnotations(destructive_hint=True))
    server.add_tool(record_memory_update, annotations=ToolAnnotations(destructive_hint=False))

    @server.resource(
        "cortexgraph://core",
        mime_type="application/json",
        description="Core memories and notes: always in context.",
    )
    def core() -> str:
        try:
            store = state.store
        except CortexGraphError as exc:
            raise ResourceError(str(exc)) from exc
        memories = [
            {
                "memory_id": m.id,
                "ref": memory_ref(m.id),
                "content": m.content,
                "tags": list(m.tags),
                "created_at": m.created_at,
            }
            for m in core_memories(store)
        ]
        try:
            with state.fresh_ltm_index() as index:
                notes = [
                    {"note_path": n.path, "title": n.title, "content": n.content[:4000]}
                    for n in (core_notes(index.notes.values()) if index is not None else [])
                ]
        except CortexGraphError as exc:
            raise ResourceError(str(exc)) from exc
        return json.dumps({"memories": memories, "notes": notes}, ensure_ascii=False)

    server.resource(  # LatentContext's address for the same block
        "memory://core", mime_type="application/json", description="Same as cortexgraph://core."
    )(core)

    @server.prompt(
        name="extract_facts",
        description="Extract durable facts from a text and save each with save_memory.",
    )
    def extract_facts(text: str) -> str:
        return prompts.extract_facts(text)

    @server.prompt(
        name="compress_session",
        description="Compress a conversation into a few memories for later sessions.",
    )
    def compress_session(text: str, max_facts: str = "10") -> str:
        if not max_facts.strip().isdigit():
            raise InvalidInputError(f"max_facts must be a whole number, got {max_facts!r}")
        return prompts.compress_session(text, int(max_facts))

    @server.prompt(
        name="consolidate_epoch",
        description="Merge, correct and mark core what was learned about a topic over a period.",
    )
    def consolidate_epoch(topic: str, period: str = "the last week") -> str:
        return prompts.consolidate_epoch(topic, period)


__all__ = [
    "graph_query",
    "memory_forget",
    "memory_retrieve",
    "memory_store",  # defined in context_seed, registered here in its place in tools/list
    "record_memory_update",
    "register",
    "set_core_memory",
]
