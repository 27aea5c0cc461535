"""Short-term memory tools: save, search, touch, observe, open, read_graph, relate, gc."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field, StrictFloat, StrictInt

from cortexgraph.mcp_server.app import state_of
from cortexgraph.mcp_server.arguments import MAX_ID_CHARS, IdText, TagText, check_save
from cortexgraph.mcp_server.errors import DependencyUnavailableError, tool_errors
from cortexgraph.mcp_server.views import (
    MAX_PAGE_SIZE,
    MAX_PREVIEW,
    memory_view,
    paginate,
    result_view,
)
from cortexgraph.storage.decay import memory_score
from cortexgraph.storage.errors import InvalidInputError, MemoryNotFoundError
from cortexgraph.storage.models import RELATION_TYPES, MemoryStatus, validate_id, validate_tags
from cortexgraph.storage.recent_saves import Neighbour, clip

MAX_TAGS = 50
MAX_QUERY_CHARS = 10_000
MAX_META_JSON = 10_000
CROSS_DOMAIN_JACCARD = 0.3  # below this tag overlap a use counts as cross-domain (as in 1.x)
CROSS_DOMAIN_BOOST = 0.05

StatusFilter = Literal["active", "promoted", "archived", "all"]
RelationType = Literal[
    "related",
    "causes",
    "supports",
    "contradicts",
    "has_decision",
    "consolidated_from",
    "superseded_by",
]
assert set(RelationType.__args__) == RELATION_TYPES  # type: ignore[attr-defined]

Tags = Annotated[
    list[TagText] | None,
    Field(description="Tags, e.g. ['project-x', 'decision']; at most 50.", max_length=MAX_TAGS),
]
MemoryId = Annotated[
    str,
    Field(description="A memory id (uuid) as returned by other tools.", max_length=MAX_ID_CHARS),
]
PreviewLength = Annotated[
    StrictInt | None,
    Field(
        description="Characters of content to return per memory (0-20000).", ge=0, le=MAX_PREVIEW
    ),
]


def _status(value: StatusFilter) -> MemoryStatus | None:
    return None if value == "all" else MemoryStatus(value)


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


def _ids(values: str | list[str], what: str = "memory_ids") -> list[str]:
    ids = [values] if isinstance(values, str) else list(values)
    if not ids:
        raise InvalidInputError(f"{what} must name at least one memory id")
    out: list[str] = []
    for value in ids:
        validate_id(value)
        if value not in out:
            out.append(value)
    return out


@tool_errors
def save_memory(
    ctx: Context,
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
    from cortexgraph.mcp_server.tools_activation import enrich

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
    enrichment = enrich(state, content, tags_t, entities, strength)
    now = time.time()
    conversation = _conversation_key(ctx)
    recent = state.recent_saves()
    before = recent.previous(conversation, now) if context is None else None
    memory = state.store.save(
        content,
        tags=enrichment.tags,
        entities=enrichment.entities,
        source=source,
        context=context if before is None else clip(before.content),
        extra=extra,
        strength=enrichment.strength,
        now=now,
    )
    recent.record(conversation, Neighbour(memory.id, content, now))
    state.embed_soon([memory])
    from cortexgraph.mcp_server.tools_context import after_save

    temporal = after_save(state, memory, supersedes)
    return {
        "success": True,
        "memory_id": memory.id,
        "tags": list(memory.tags),
        "entities": list(memory.entities),
        "strength": memory.strength,
        "enrichment": enrichment.label,
        "enrichment_applied": list(enrichment.applied),
        "temporal": temporal,
        "message": f"Memory saved with ID: {memory.id}",
    }


def _conversation_key(ctx: Context) -> str:
    """Which conversation a call belongs to: the HTTP session, or the one stdio client."""
    headers = getattr(ctx, "headers", None) or {}
    return str(headers.get("mcp-session-id") or "stdio")


@tool_errors
def search_memory(
    ctx: Context,
    query: Annotated[
        str | None, Field(description="What to look for, in words.", max_length=MAX_QUERY_CHARS)
    ] = None,
    tags: Tags = None,
    top_k: Annotated[StrictInt, Field(description="How many results (1-100).", ge=1, le=100)] = 10,
    window_days: Annotated[
        StrictFloat | None,
        Field(description="Only memories used in the last N days.", gt=0, le=3650),
    ] = None,
    min_score: Annotated[
        StrictFloat | None, Field(description="Minimum decay score (0-2).", ge=0, le=2)
    ] = None,
    use_embeddings: Annotated[
        bool,
        Field(
            description="Also rank by semantic similarity "
            "(loads an embedding model on first use; falls back "
            "to BM25 when the model is absent)."
        ),
    ] = True,
    status: Annotated[StatusFilter, Field(description="Which memories to search.")] = "active",
    preview_length: PreviewLength = None,
) -> dict[str, Any]:
    """Search short-term memory by relevance (BM25, optionally semantic), re-ranked by decay."""
    state = state_of(ctx)
    store = state.store
    if store.dense is None:
        embeddings = "off (CORTEXGRAPH_ENABLE_EMBEDDINGS=false)"
    else:
        embeddings = "used" if use_embeddings else "off"
    args: dict[str, Any] = {
        "tags": validate_tags(tags),
        "top_k": top_k,
        "window_days": window_days,
        "min_score": min_score,
        "status": _status(status),
    }
    try:
        results = store.search(query, use_embeddings=use_embeddings, **args)
    except DependencyUnavailableError as exc:
        embeddings = f"unavailable ({exc}); ranked by BM25 only"
        results = store.search(query, use_embeddings=False, **args)
    length = (
        state.settings.search_default_preview_length if preview_length is None else preview_length
    )
    return {
        "success": True,
        "count": len(results),
        "embeddings": embeddings,
        "results": [result_view(r, length) for r in results],
    }


@tool_errors
def touch_memory(
    ctx: Context,
    memory_id: MemoryId,
    boost_strength: Annotated[
        bool, Field(description="Also raise its strength by 0.1 (max 2.0).")
    ] = False,
) -> dict[str, Any]:
    """Reinforce a memory: reset its decay clock and count a use."""
    store = state_of(ctx).store
    now = time.time()
    decay = store.config.decay
    before = store.get(validate_id(memory_id))
    after = store.touch(memory_id, boost_strength=boost_strength, now=now)
    return {
        "success": True,
        "memory_id": after.id,
        "old_score": round(memory_score(before, now, decay), 4),
        "new_score": round(memory_score(after, now, decay), 4),
        "use_count": after.use_count,
        "strength": round(after.strength, 4),
    }


@tool_errors
def observe_memory_usage(
    ctx: Context,
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
    ids = _ids(memory_ids)
    ctx_tags = {t.lower() for t in validate_tags(context_tags, "context_tags")}
    memories = [store.find(i) for i in ids]
    missing = [i for i, m in zip(ids, memories, strict=True) if m is None]
    if missing:
        raise MemoryNotFoundError(f"no memory with id(s) {missing}; nothing was recorded")
    now = int(time.time())
    updated, report = [], []
    for m in memories:
        assert m is not None
        own = {t.lower() for t in m.tags}
        jaccard = len(own & ctx_tags) / len(own | ctx_tags) if own and ctx_tags else None
        cross = jaccard is not None and jaccard < CROSS_DOMAIN_JACCARD
        new = replace(
            m,
            last_used=now,
            use_count=m.use_count + 1,
            last_review_at=now,
            review_count=m.review_count + 1,
            review_priority=0.0,
            cross_domain_count=m.cross_domain_count + int(cross),
            strength=min(2.0, m.strength + CROSS_DOMAIN_BOOST) if cross else m.strength,
        )
        updated.append(new)
        report.append(
            {
                "id": m.id,
                "status": "reinforced",
                "cross_domain": cross,
                "tag_jaccard": None if jaccard is None else round(jaccard, 3),
                "new_use_count": new.use_count,
                "new_review_count": new.review_count,
                "use_count": new.use_count,
                "review_count": new.review_count,
                "strength": round(new.strength, 4),
            }
        )
    store.put_many(updated)
    return {
        "success": True,
        "reinforced": True,
        "count": len(updated),
        "cross_domain_count": sum(r["cross_domain"] for r in report),
        "results": report,
    }


@tool_errors
def open_memories(
    ctx: Context,
    memory_ids: Annotated[
        IdText | Annotated[list[IdText], Field(max_length=100)],
        Field(description="One id or a list of up to 100."),
    ],
    include_relations: Annotated[bool, Field(description="Include relations.")] = True,
    include_scores: Annotated[bool, Field(description="Include decay score and age.")] = True,
    page: Annotated[StrictInt, Field(description="Page number, from 1.", ge=1)] = 1,
    page_size: Annotated[
        StrictInt, Field(description="Memories per page (1-100).", ge=1, le=MAX_PAGE_SIZE)
    ] = 10,
    preview_length: PreviewLength = None,
) -> dict[str, Any]:
    """Open specific memories by id, with full content (bounded) and their relations."""
    if not isinstance(memory_ids, str) and len(memory_ids) > 100:
        raise InvalidInputError(f"at most 100 memory_ids per call, got {len(memory_ids)}")
    store = state_of(ctx).store
    ids = _ids(memory_ids)
    found = [m for m in (store.find(i) for i in ids) if m is not None]
    not_found = [i for i in ids if i not in {m.id for m in found}]
    if not found:
        raise MemoryNotFoundError(f"no memory with id(s) {not_found}")
    pg = paginate(found, page, page_size)
    now = time.time()
    length = 5000 if preview_length is None else preview_length
    views = []
    for m in pg.items:
        view = memory_view(
            m, preview_length=length, now=now if include_scores else None, decay=store.config.decay
        )
        if include_relations:
            rels = store.relations(m.id)
            view["relations"] = {
                "outgoing": [r.to_json() for r in rels if r.from_memory_id == m.id][:50],
                "incoming": [r.to_json() for r in rels if r.to_memory_id == m.id][:50],
            }
        views.append(view)
    return {"success": True, "memories": views, "not_found": not_found, "pagination": pg.meta()}


def _graph_stats(
    memories: list[Any], relations: int, now: float, decay: Any, status: str
) -> dict[str, Any]:
    """1.x's stats (total_memories, total_relations, avg_score, avg_use_count) and today's."""
    n = len(memories)
    return {
        "total_memories": n,
        "total_relations": relations,
        "avg_score": round(sum(memory_score(m, now, decay) for m in memories) / n, 4) if n else 0.0,
        "avg_use_count": round(sum(m.use_count for m in memories) / n, 4) if n else 0.0,
        "status_filter": status,
        "memories": n,
        "relations": relations,
    }


@tool_errors
def read_graph(
    ctx: Context,
    status: Annotated[StatusFilter, Field(description="Which memories.")] = "active",
    include_scores: Annotated[bool, Field(description="Include decay score and age.")] = True,
    limit: Annotated[
        StrictInt | None,
        Field(description="Consider at most this many memories (newest first).", ge=1, le=10_000),
    ] = None,
    page: Annotated[StrictInt, Field(description="Page number, from 1.", ge=1)] = 1,
    page_size: Annotated[
        StrictInt, Field(description="Memories per page (1-100).", ge=1, le=MAX_PAGE_SIZE)
    ] = 10,
    preview_length: PreviewLength = None,
) -> dict[str, Any]:
    """The memory graph, one page at a time: memories and the relations among them."""
    state = state_of(ctx)
    store = state.store
    memories = sorted(store.list(status=_status(status)), key=lambda m: (-m.created_at, m.id))
    if limit is not None:
        memories = memories[:limit]
    pg = paginate(memories, page, page_size)
    now = time.time()
    length = (
        state.settings.search_default_preview_length if preview_length is None else preview_length
    )
    on_page = {m.id for m in pg.items}
    relations: dict[str, Any] = {}
    for mid in on_page:
        for r in store.relations(mid):
            relations.setdefault(r.id, r.to_json())
    return {
        "success": True,
        "memories": [
            memory_view(
                m,
                preview_length=length,
                now=now if include_scores else None,
                decay=store.config.decay,
            )
            for m in pg.items
        ],
        "relations": sorted(relations.values(), key=lambda r: (r["created_at"], r["id"]))[:500],
        "stats": _graph_stats(memories, len(store.relations()), now, store.config.decay, status),
        "pagination": {**pg.meta(), "total_count": pg.total},
    }


@tool_errors
def create_relation(
    ctx: Context,
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
        validate_id(from_memory_id),
        validate_id(to_memory_id),
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
    }


@tool_errors
def gc(
    ctx: Context,
    dry_run: Annotated[bool, Field(description="Only report what would go (default).")] = True,
    archive_instead: Annotated[bool, Field(description="Archive instead of deleting.")] = False,
    limit: Annotated[
        StrictInt | None,
        Field(description="At most this many (1-10000), weakest first.", ge=1, le=10_000),
    ] = None,
) -> dict[str, Any]:
    """Forget (or archive) memories whose decay score fell below the forget threshold."""
    store = state_of(ctx).store
    now = time.time()
    decay = store.config.decay
    scored = [
        (memory_score(m, now, decay), m)
        for m in store.list(status=MemoryStatus.ACTIVE)
        if not m.is_core
    ]
    doomed = sorted((s, m.id, m) for s, m in scored if s < decay.forget_threshold)
    if limit is not None:
        doomed = doomed[:limit]
    ids = [mid for _, mid, _ in doomed]
    if not dry_run:
        if archive_instead:
            store.put_many([replace(m, status=MemoryStatus.ARCHIVED) for _, _, m in doomed])
        else:
            for mid in ids:
                store.delete(mid)
    verb = (
        ("Would archive" if archive_instead else "Would remove")
        if dry_run
        else ("Archived" if archive_instead else "Removed")
    )
    return {
        "success": True,
        "dry_run": dry_run,
        "removed_count": 0 if archive_instead else len(ids),
        "archived_count": len(ids) if archive_instead else 0,
        "freed_score_sum": round(sum(s for s, _, _ in doomed), 4),
        "memory_ids": ids[:20],
        "total_affected": len(ids),
        "message": f"{verb} {len(ids)} memories below the forget threshold "
        f"{decay.forget_threshold}",
    }


def register(server: MCPServer) -> None:
    read_only = ToolAnnotations(read_only_hint=True)
    additive = ToolAnnotations(read_only_hint=False, destructive_hint=False)
    server.add_tool(save_memory, annotations=additive)
    server.add_tool(search_memory, annotations=read_only)
    server.add_tool(touch_memory, annotations=additive)
    server.add_tool(observe_memory_usage, annotations=additive)
    server.add_tool(open_memories, annotations=read_only)
    server.add_tool(read_graph, annotations=read_only)
    server.add_tool(create_relation, annotations=additive)
    server.add_tool(gc, annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))


__all__ = [
    "create_relation",
    "gc",
    "observe_memory_usage",
    "open_memories",
    "read_graph",
    "register",
    "save_memory",
    "search_memory",
    "touch_memory",
]
