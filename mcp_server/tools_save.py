"""Tools that write what the assistant learned or used: save, touch, observe use, relate."""

from __future__ import annotations

import json
import time
from typing import Annotated, Any, Literal, get_args

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field, StrictFloat

from cortexgraph import activation
from cortexgraph.mcp_server.arguments import (
    MAX_ID_CHARS,
    IdText,
    Tags,
    TagText,
    check_save,
    resolved_ids,
    unique_ids,
)
from cortexgraph.mcp_server.entity_reading import read_entities_soon
from cortexgraph.mcp_server.errors import tool_errors
from cortexgraph.mcp_server.state import ServerContext, ServerState, state_of
from cortexgraph.retrieval.core import resolve_memory_id
from cortexgraph.retrieval.temporal import after_save
from cortexgraph.storage.decay import memory_score
from cortexgraph.storage.errors import InvalidInputError, MemoryNotFoundError
from cortexgraph.storage.models import RELATION_TYPES, validate_tags
from cortexgraph.storage.recent_saves import save_with_neighbour
from cortexgraph.storage.reinforcement import observe_use
from cortexgraph.storage.secrets import REDACTED_KEY, redact_secrets

MAX_META_JSON = 10_000

RelationType = Literal[
    "related",
    "causes",
    "supports",
    "contradicts",
    "has_decision",
    "consolidated_from",
    "superseded_by",
]
assert set(get_args(RelationType)) == RELATION_TYPES

MemoryId = Annotated[
    str,
    Field(
        description="A memory id as returned by other tools, or a unique prefix of 8+ characters.",
        max_length=MAX_ID_CHARS,
    ),
]


def _meta(meta: dict[str, Any] | None, what: str = "meta") -> dict[str, Any]:
    if meta is None:
        return {}
    try:
        size = len(json.dumps(meta, ensure_ascii=False))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be JSON-serialisable: {exc}") from exc
    if size > MAX_META_JSON:
        raise InvalidInputError(
            f"{what} is {size:,} characters of JSON; keep it under {MAX_META_JSON:,}"
        )
    return meta


@tool_errors
def save_memory(
    ctx: ServerContext,
    content: Annotated[
        str,
        Field(
            description="The fact, decision or preference to remember, "
            "written so it stands on its own."
        ),
    ],
    tags: Tags = None,
    entities: Annotated[
        list[TagText] | None,
        Field(
            description="Named entities (people, projects, tools); extracted automatically when "
            "omitted.",
            max_length=100,
        ),
    ] = None,
    source: Annotated[
        str | None, Field(description="Where this came from.", max_length=500)
    ] = None,
    context: Annotated[
        str | None, Field(description="The situation it was said in.", max_length=1000)
    ] = None,
    meta: Annotated[dict[str, Any] | None, Field(description="Extra JSON metadata.")] = None,
    strength: Annotated[
        StrictFloat | None,
        Field(
            description="Importance 0.0-2.0 (1.0 normal); estimated from the text when omitted.",
            ge=0.0,
            le=2.0,
        ),
    ] = None,
    supersedes: Annotated[
        list[IdText] | None,
        Field(
            description="Ids of memories this one replaces (e.g. 'we now use Postgres instead of "
            "MySQL'); they are kept as history. Detected automatically when omitted.",
            max_length=20,
        ),
    ] = None,
) -> dict[str, Any]:
    """Save a memory to short-term storage. It fades unless used; important ones get promoted."""
    state = state_of(ctx)
    check_save(
        state,
        content=content,
        tags=tags,
        entities=entities,
        source=source,
        context=context,
        meta=meta,
        supersedes=supersedes,
        max_meta_chars=MAX_META_JSON,
    )  # before any analysis or write
    if not content.strip():
        raise InvalidInputError("content is empty; pass the text to remember")
    tags_t = None if tags is None else validate_tags(tags)
    extra = _meta(meta)
    if state.store.config.redact_secrets:  # before analysis: no secret becomes an entity
        found = redact_secrets(content)
        content = found.text
        if found.kinds:
            extra[REDACTED_KEY] = list(found.kinds)
    enrichment = activation.enrich_for_save(
        content,
        tags=tags_t,
        entities=entities,
        strength=strength,
        store=state.store,
        config=activation.ActivationConfig.from_mapping(state.settings),
    )
    # the turn before, ranked with this one (storage.recent_saves), never shown
    memory = save_with_neighbour(
        state.store,
        state.recent_saves,
        _conversation_key(ctx),
        content,
        now=time.time(),
        context=context,
        tags=enrichment.tags,
        entities=enrichment.entities,
        source=source,
        extra=extra,
        strength=1.0 if enrichment.strength is None else float(enrichment.strength),
    )
    state.embed_soon([memory])
    read_entities_soon(state)  # the next run's entity step, in a child once saves stop
    temporal = after_save(
        state.store, memory, supersedes, auto_supersede=state.settings.auto_supersede
    )
    return {
        "success": True,
        "memory_id": memory.id,
        "redacted": list(memory.meta.extra.get(REDACTED_KEY, ())),  # kinds of secret removed
        "tags": list(memory.tags),
        "entities": list(memory.entities),
        "strength": memory.strength,
        "enrichment": enrichment.label,
        "enrichment_applied": list(enrichment.enrichment_applied),
        "temporal": temporal.to_json(),
        "message": f"Memory saved with ID: {memory.id}",
        # 1.x: semantic search covers it (embedded in the background, or by the first search)
        "has_embedding": state.dense is not None,
    }


def _conversation_key(ctx: ServerContext) -> str:
    """Which conversation a call belongs to: the HTTP session, or the one stdio client."""
    headers = getattr(ctx, "headers", None) or {}
    return str(headers.get("mcp-session-id") or "stdio")


@tool_errors
def touch_memory(
    ctx: ServerContext,
    memory_id: MemoryId,
    boost_strength: Annotated[
        bool, Field(description="Also raise its strength by 0.1 (max 2.0).")
    ] = False,
) -> dict[str, Any]:
    """Reinforce a memory: reset its decay clock and count a use."""
    store = state_of(ctx).store
    now = time.time()
    decay = store.config.decay
    memory_id = resolve_memory_id(store, memory_id)
    before = store.get(memory_id)
    after = store.touch(memory_id, boost_strength=boost_strength, now=now)
    old_score = round(memory_score(before, now, decay), 4)
    new_score = round(memory_score(after, now, decay), 4)
    return {
        "success": True,
        "memory_id": after.id,
        "old_score": old_score,
        "new_score": new_score,
        "use_count": after.use_count,
        "strength": round(after.strength, 4),
        "message": f"Memory reinforced. Score: {old_score:.2f} -> {new_score:.2f}",
    }


@tool_errors
def observe_memory_usage(
    ctx: ServerContext,
    memory_ids: Annotated[
        list[IdText],
        Field(
            description="Ids of memories you actually used in your answer.",
            min_length=1,
            max_length=100,
        ),
    ],
    context_tags: Annotated[
        list[TagText] | None,
        Field(
            description="Tags describing the current conversation; a use far from a memory's own "
            "tags counts as cross-domain and strengthens it more.",
            max_length=50,
        ),
    ] = None,
) -> dict[str, Any]:
    """Record that memories were used in a response (natural spaced repetition)."""
    state = state_of(ctx)
    if not state.settings.auto_reinforce:  # CORTEXGRAPH_AUTO_REINFORCE=false, as in 1.x
        return {
            "success": True,
            "reinforced": False,
            "count": 0,
            "cross_domain_count": 0,
            "results": [],
            "reason": "auto_reinforce is disabled in config",
        }
    store = state.store
    missing: list[str] = []
    ids = resolved_ids(store, unique_ids(memory_ids), missing)
    context = validate_tags(context_tags, "context_tags")
    if missing:
        raise MemoryNotFoundError(f"no memory with id(s) {missing}; nothing was recorded")
    now = int(time.time())
    observed: dict[str, Any] = {}

    def observe(memory: Any) -> Any:
        observed[memory.id] = observe_use(memory, context, now)
        return observed[memory.id].memory

    # Read and written under one hold of the store's lock: a touch from another process
    # between the read and the write would otherwise be lost.
    store.modify_many(ids, observe)
    uses = [observed[i] for i in ids if i in observed]
    report = [
        {
            "id": u.memory.id,
            "status": "reinforced",
            "cross_domain": u.cross_domain,
            "tag_jaccard": None if u.tag_jaccard is None else round(u.tag_jaccard, 3),
            "new_use_count": u.memory.use_count,
            "new_review_count": u.memory.review_count,
            "use_count": u.memory.use_count,
            "review_count": u.memory.review_count,
            "strength": round(u.memory.strength, 4),
        }
        for u in uses
    ]
    return {
        "success": True,
        "reinforced": True,
        "count": len(uses),
        "cross_domain_count": sum(r["cross_domain"] for r in report),
        "results": report,
    }


@tool_errors
def create_relation(
    ctx: ServerContext,
    from_memory_id: MemoryId,
    to_memory_id: MemoryId,
    relation_type: Annotated[
        RelationType, Field(description="How the first memory relates to the second.")
    ],
    strength: Annotated[StrictFloat, Field(description="Strength 0.0-1.0.", ge=0.0, le=1.0)] = 1.0,
    metadata: Annotated[dict[str, Any] | None, Field(description="Extra JSON metadata.")] = None,
) -> dict[str, Any]:
    """Link two memories with a typed relation."""
    store = state_of(ctx).store
    rel = store.add_relation(
        resolve_memory_id(store, from_memory_id),
        resolve_memory_id(store, to_memory_id),
        relation_type,
        strength=strength,
        metadata=_meta(metadata, "metadata"),
    )
    return {
        "success": True,
        "relation_id": rel.id,
        "from": rel.from_memory_id,
        "to": rel.to_memory_id,
        "type": rel.relation_type,
        "strength": rel.strength,
        "message": f"Relation created: {rel.from_memory_id} --[{rel.relation_type}]--> "
        f"{rel.to_memory_id}",
    }


def register(server: MCPServer[ServerState], state: ServerState) -> None:
    """Add this module's tools (their handlers reach the state through their ctx)."""
    additive = ToolAnnotations(read_only_hint=False, destructive_hint=False)
    server.add_tool(save_memory, annotations=additive)
    server.add_tool(touch_memory, annotations=additive)
    server.add_tool(observe_memory_usage, annotations=additive)
    server.add_tool(create_relation, annotations=additive)


__all__ = ["create_relation", "observe_memory_usage", "register", "save_memory", "touch_memory"]
