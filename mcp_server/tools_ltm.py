"""Long-term memory tools: promote to the Obsidian vault, search STM and LTM together."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field, StrictFloat, StrictInt

from cortexgraph.mcp_server.arguments import TagText
from cortexgraph.mcp_server.collaborators import embedder_for, note_sink
from cortexgraph.mcp_server.errors import tool_errors
from cortexgraph.mcp_server.state import ServerContext, ServerState, state_of
from cortexgraph.mcp_server.views import preview
from cortexgraph.retrieval.core import resolve_memory_id
from cortexgraph.storage.decay import DAY, memory_score, promotion_reason
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import MemoryStatus, validate_tags

if TYPE_CHECKING:
    from cortexgraph.vault_sync.ltm_index import LTMIndex

MAX_AUTO_PROMOTE = 50
PREVIEW_CHARS = 100  # a candidate's content_preview, as 1.x


def _outcome(outcome: Any) -> dict[str, Any]:
    return {
        k: getattr(outcome, k)
        for k in ("memory_id", "promoted", "reason", "path", "created", "conflict_path")
    }


@tool_errors
def promote_memory(
    ctx: ServerContext,
    memory_id: Annotated[
        str | None,
        Field(
            description="The memory to promote: its id or a unique prefix of 8+ characters.",
            max_length=200,
        ),
    ] = None,
    auto_detect: Annotated[
        bool, Field(description="Promote every memory that meets the criteria instead.")
    ] = False,
    dry_run: Annotated[bool, Field(description="Only report what would be promoted.")] = False,
    target: Annotated[
        Literal["obsidian"], Field(description="Where to: the Obsidian vault.")
    ] = "obsidian",
    force: Annotated[bool, Field(description="Promote even if the criteria are not met.")] = False,
) -> dict[str, Any]:
    """Promote valuable memories to long-term storage (a markdown note in the vault).

    A memory qualifies through use over time, never the moment it is saved: a score >= 0.65
    after at least 2 recalls, or 5 uses within 14 days (the consolidation pipeline's rule)."""
    from cortexgraph.vault_sync.promotion import promote_memory as promote

    state = state_of(ctx)
    store = state.store
    decay = store.config.decay
    now = time.time()
    if memory_id is None and not auto_detect:
        raise InvalidInputError("pass memory_id, or auto_detect=true to promote every candidate")
    if memory_id is not None:
        ids = [resolve_memory_id(store, memory_id)]
        found = None
    else:
        # The one promotion rule (storage.decay.promotion_reason), as the LTMPromoter's.
        eligible = sorted(
            m.id
            for m in store.list(status=MemoryStatus.ACTIVE)
            if promotion_reason(m, now, decay) is not None
        )
        found, ids = len(eligible), eligible[:MAX_AUTO_PROMOTE]
    memories = {i: store.get(i) for i in ids}  # as they were before promotion
    # A dry run never writes (promote_memory returns before the sink), so it makes no vault.
    sink: Any = None if dry_run else note_sink(state)
    outcomes = [promote(store, sink, i, now=now, force=force, dry_run=dry_run) for i in ids]
    chosen = [o for o in outcomes if o.promoted]
    candidates = [
        {
            "id": o.memory_id,
            "content_preview": preview(memories[o.memory_id].content, PREVIEW_CHARS),
            "reason": o.reason,
            "score": round(memory_score(memories[o.memory_id], now, decay), 4),
            "use_count": memories[o.memory_id].use_count,
            "age_days": round(max(0.0, now - memories[o.memory_id].created_at) / DAY, 2),
        }
        for o in chosen
    ]
    verb = "Would promote" if dry_run else "Promoted"
    message = f"{verb} {len(chosen)} memor{'y' if len(chosen) == 1 else 'ies'} to {target}"
    if found is not None and found > len(ids):
        message += f" (the first {len(ids)} of {found} candidates; call again for the rest)"
    return {
        "success": True,
        "dry_run": dry_run,
        "target": target,
        "vault": str(state.settings.vault_path),
        "candidates_found": len(candidates) if found is None else found,
        "promoted_count": len(chosen),
        "promoted_ids": [o.memory_id for o in chosen],
        "candidates": candidates,
        "message": message,
        "results": [_outcome(o) for o in outcomes],
    }


@tool_errors
def search_unified(
    ctx: ServerContext,
    query: Annotated[str | None, Field(description="What to look for.", max_length=10_000)] = None,
    tags: Annotated[
        list[TagText] | None, Field(description="Only results with these tags.", max_length=50)
    ] = None,
    limit: Annotated[StrictInt, Field(description="How many results (1-100).", ge=1, le=100)] = 10,
    stm_weight: Annotated[
        StrictFloat | None, Field(description="Weight of short-term memories (0-2).", ge=0, le=2)
    ] = None,
    ltm_weight: Annotated[
        StrictFloat | None, Field(description="Weight of long-term notes (0-2).", ge=0, le=2)
    ] = None,
    window_days: Annotated[
        StrictFloat | None, Field(description="Only STM used in the last N days.", gt=0, le=3650)
    ] = None,
    min_score: Annotated[
        StrictFloat | None, Field(description="Minimum STM decay score.", ge=0, le=2)
    ] = None,
    verbose: Annotated[bool, Field(description="Include ids, note paths and score parts.")] = False,
    use_embeddings: Annotated[
        bool,
        Field(
            description="Also rank by semantic similarity (loads an embedding model on first use)."
        ),
    ] = True,
) -> dict[str, Any]:
    """Search short-term memory and the long-term vault together, in one ranking. Memories
    that faded and were archived are still found, marked "archived": true, ranked below
    equally relevant active ones; using one (observe_memory_usage) makes it active again."""
    from cortexgraph.vault_sync.unified_search import search_unified as search

    state = state_of(ctx)
    s = state.settings
    embedder, sim_note = embedder_for(state) if use_embeddings else (None, "keyword (BM25) only")
    with state.fresh_ltm_index() as index:
        ltm_note = _ltm_note(state, index)
        results = search(
            state.store,
            index,
            query or "",
            tags=list(validate_tags(tags)),
            limit=limit,
            window_days=window_days,
            min_score=min_score,
            verbose=verbose,
            embedder=embedder,
            **s.unified_search_weights(stm_weight, ltm_weight),
        )
    return {
        "success": True,
        "count": len(results),
        "ltm": ltm_note,
        "similarity": sim_note,
        "results": [r.to_json(verbose) for r in results],
    }


def _ltm_note(state: ServerState, index: LTMIndex | None) -> str:
    """What the long-term side of a search covered."""
    vault = state.settings.vault_path
    if index is None:
        return f"no vault at {vault} yet (LTM_VAULT_PATH): short-term memories only"
    return f"{len(index.notes)} notes in {vault}"


def register(server: MCPServer[ServerState], state: ServerState) -> None:
    """Add this module's tools (their handlers reach the state through their ctx)."""
    server.add_tool(promote_memory, annotations=ToolAnnotations(destructive_hint=False))
    server.add_tool(search_unified, annotations=ToolAnnotations(read_only_hint=True))


__all__ = ["promote_memory", "register", "search_unified"]
