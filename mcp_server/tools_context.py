"""Context tools: memory_retrieve, graph_query, core memory, temporal truth, fact prompts.

The logic lives in ``retrieval``; this module reads settings, finds the vault and the update
intent (activation), and translates errors.
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

from cortexgraph.mcp_server.app import ServerContext, ServerState, state_of
from cortexgraph.mcp_server.arguments import MAX_ID_CHARS, IdText, check_content, check_supersedes
from cortexgraph.mcp_server.collaborators import embedder_for
from cortexgraph.mcp_server.errors import DependencyUnavailableError, tool_errors
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
# LatentContext's memory types (its memory_store categories) and the tiers they are read from.
SEED_TYPES: dict[str, tuple[str, ...]] = {
    "fact": ("stm", "ltm", "graph"),
    "preference": ("stm", "ltm"),
    "event": ("stm", "ltm"),
    "summary": ("stm", "ltm"),
    "working": ("stm",),
}
SeedType = Literal["fact", "preference", "event", "summary", "working"]
StoreType = Literal["fact", "preference", "event", "summary", "core"]
FILTER_KEYS = ("memory_types", "after", "before", "min_confidence")


def _tiers(types: Any) -> tuple[list[str] | None, list[str]]:
    """Our tiers for a memory_types list that may use LatentContext's names, and notes saying
    how each of those was read."""
    if types is None:
        return None, []
    if isinstance(types, str):
        types = [types]
    if not isinstance(types, list):
        raise InvalidInputError("memory_types must be a list, e.g. ['stm', 'ltm'] or ['fact']")
    tiers: list[str] = []
    notes = []
    for t in types:
        if t in SEED_TYPES:
            tiers += SEED_TYPES[t]
            notes.append(f"memory_types {t!r} read as tiers {', '.join(SEED_TYPES[t])}")
        else:
            tiers.append(t)  # ours, or refused below with the list of names
    return list(dict.fromkeys(tiers)), notes


def _ltm_index(state: ServerState) -> Any:
    """The vault's LTM index (shared with search_unified), refreshed; None without a vault."""
    vault = state.settings.vault_path
    if vault is None or not vault.is_dir():
        return None
    from cortexgraph.vault_sync.ltm_index import LTMIndex

    index = state.service("ltm_index", lambda: LTMIndex.open(vault, refresh=False))
    index.refresh()
    return index


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
    (m:...) or note paths (n:...); other tools accept both."""
    state = state_of(ctx)
    given: dict[str, Any] = {"memory_types": memory_types, "after": after, "before": before}
    given["min_confidence"] = min_confidence
    for key, value in (filters or {}).items():
        if key not in FILTER_KEYS:
            raise InvalidInputError(
                f"unknown filter {key!r}; filters takes {', '.join(FILTER_KEYS)}"
            )
        if (isinstance(value, str) and len(value) > 64) or (
            isinstance(value, list) and len(value) > 9
        ):
            raise InvalidInputError(f"filters.{key} is too long (dates: 64 characters, 9 types)")
        if given[key] is not None and given[key] != value:
            raise InvalidInputError(f"{key} given twice (argument and filters) with two values")
        given[key] = value
    given["memory_types"], read_as = _tiers(given["memory_types"])
    chosen = RetrievalFilters.from_mapping(given)
    embedder = embedder_for(state)[0] if use_embeddings else None
    kwargs: dict[str, Any] = {
        "filters": chosen,
        "ltm_index": _ltm_index(state),
        "embedder": embedder,
        "include_history": include_history,
    }
    try:
        result = retrieve(state.store, query, token_budget, use_embeddings=use_embeddings, **kwargs)
    except DependencyUnavailableError as exc:
        result = retrieve(state.store, query, token_budget, use_embeddings=False, **kwargs)
        result = replace(
            result, notes=(*result.notes, f"embeddings unavailable ({exc}); BM25 only")
        )
    if read_as:
        result = replace(result, notes=(*result.notes, *read_as))
    return {"success": True, **result.to_json(items=items)}


@tool_errors
def memory_store(
    ctx: ServerContext,
    content: Annotated[
        str, Field(description="The information to store.", min_length=1, max_length=50_000)
    ],
    memory_type: Annotated[
        StoreType, Field(description="fact, preference, event, summary, or core (never fades).")
    ],
    confidence: Annotated[
        StrictFloat | None,
        Field(description="0-1; lower fades sooner (strength 0.5 + confidence).", ge=0, le=1),
    ] = None,
    entities: Annotated[
        list[Annotated[str, Field(max_length=200)]] | None,
        Field(description="Key entities, for the graph.", max_length=50),
    ] = None,
) -> dict[str, Any]:
    """LatentContext's memory_store: save_memory with the type as a tag ('core' also marks it
    core, always in context). A stated change of a fact supersedes the old one."""
    state = state_of(ctx)
    check_content(content, state.settings.max_content_bytes)
    strength = 1.0 if confidence is None else round(0.5 + confidence, 4)
    memory = state.store.save(
        content,
        tags=[memory_type],
        entities=entities if entities is not None else (),
        source="memory_store",
        strength=strength,
        now=time.time(),
    )
    if memory_type == "core":
        memory = set_core(state.store, memory.id)
    state.embed_soon([memory])
    temporal = after_save(state.store, memory, None, auto_supersede=state.settings.auto_supersede)
    return {
        "success": True,
        "memory_id": memory.id,
        "ref": memory_ref(memory.id),
        "memory_type": memory_type,
        "strength": memory.strength,
        "core": memory.is_core,
        "temporal": temporal.to_json(),
        "message": f"Stored as {memory.id} (tag {memory_type!r})",
    }


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
    result = query_graph(
        state.store,
        entity,
        relation=relation,
        depth=depth,
        ltm_index=_ltm_index(state),
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
            index = _ltm_index(state)
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
        notes = [
            {"note_path": n.path, "title": n.title, "content": n.content[:4000]}
            for n in (core_notes(index.notes.values()) if index is not None else [])
        ]
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
    "memory_store",
    "record_memory_update",
    "register",
    "set_core_memory",
]
