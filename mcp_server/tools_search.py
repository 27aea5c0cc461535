"""Tools that read short-term memory: search, open by id, the memory graph page by page."""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field, StrictFloat, StrictInt

from cortexgraph.mcp_server.arguments import IdText, Tags, resolved_ids, unique_ids
from cortexgraph.mcp_server.errors import DependencyUnavailableError, tool_errors
from cortexgraph.mcp_server.state import ServerContext, ServerState, state_of
from cortexgraph.mcp_server.views import (
    MAX_PAGE_SIZE,
    MAX_PREVIEW,
    memory_view,
    paginate,
    relation_view,
    result_view,
)
from cortexgraph.storage.decay import memory_score
from cortexgraph.storage.errors import InvalidInputError, MemoryNotFoundError
from cortexgraph.storage.models import MemoryStatus, SearchResult, validate_tags
from cortexgraph.storage.save_order import newest_first

MAX_QUERY_CHARS = 10_000

StatusFilter = Literal["active", "promoted", "archived", "all"]
PreviewLength = Annotated[
    StrictInt | None,
    Field(
        description="Characters of content to return per memory (0-20000).", ge=0, le=MAX_PREVIEW
    ),
]


def _status(value: StatusFilter) -> MemoryStatus | None:
    return None if value == "all" else MemoryStatus(value)


@tool_errors
def search_memory(
    ctx: ServerContext,
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
    chosen_tags, chosen_status = validate_tags(tags), _status(status)

    def search(embed: bool) -> list[SearchResult]:
        return store.search(
            query,
            tags=chosen_tags,
            top_k=top_k,
            window_days=window_days,
            min_score=min_score,
            status=chosen_status,
            use_embeddings=embed,
        )

    try:
        results = search(use_embeddings)
    except DependencyUnavailableError as exc:
        embeddings = f"unavailable ({exc}); ranked by BM25 only"
        results = search(False)
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
def open_memories(
    ctx: ServerContext,
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
    not_found: list[str] = []
    ids = resolved_ids(store, unique_ids(memory_ids), not_found)
    found = store.find_many(ids)
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
                "outgoing": [relation_view(r) for r in rels if r.from_memory_id == m.id][:50],
                "incoming": [relation_view(r) for r in rels if r.to_memory_id == m.id][:50],
            }
        # 1.x: promoted_at / promoted_to on every memory, null until promoted
        view["promoted_at"] = m.promoted_at
        view["promoted_to"] = m.promoted_to
        views.append(view)
    return {
        "success": True,
        "count": len(views),  # 1.x: the memories returned (this page)
        "memories": views,
        "not_found": not_found,
        "pagination": pg.meta(),
    }


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
    ctx: ServerContext,
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
    memories = newest_first(store, store.list(status=_status(status)))
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
            relations.setdefault(r.id, relation_view(r))
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


def register(server: MCPServer[ServerState], state: ServerState) -> None:
    """Add this module's tools (their handlers reach the state through their ctx)."""
    read_only = ToolAnnotations(read_only_hint=True)
    server.add_tool(search_memory, annotations=read_only)
    server.add_tool(open_memories, annotations=read_only)
    server.add_tool(read_graph, annotations=read_only)


__all__ = ["open_memories", "read_graph", "register", "search_memory"]
