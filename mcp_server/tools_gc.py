"""The ``gc`` tool: forget (or archive) what decayed below the forget threshold.

Which memories may go is storage.decay's one gc rule (``gc_candidates``), the same the
consolidation pipeline's DecayAnalyzer applies: core memories, promotion candidates and
valuable ones (used often, held strongly) are spared however low their score.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field, StrictInt

from cortexgraph.mcp_server.errors import tool_errors
from cortexgraph.mcp_server.state import ServerContext, ServerState, state_of
from cortexgraph.storage.decay import gc_candidates
from cortexgraph.storage.graveyard import Graveyard
from cortexgraph.storage.models import MemoryStatus

CAUSE = "gc (MCP): below the forget threshold"


@tool_errors
def gc(
    ctx: ServerContext,
    dry_run: Annotated[bool, Field(description="Only report what would go (default).")] = True,
    archive_instead: Annotated[bool, Field(description="Archive instead of deleting.")] = False,
    limit: Annotated[
        StrictInt | None,
        Field(description="At most this many (1-10000), weakest first.", ge=1, le=10_000),
    ] = None,
) -> dict[str, Any]:
    """Forget (or archive) memories whose decay score fell below the forget threshold; core
    memories, promotion candidates and valuable ones (used often, held strongly) are spared."""
    state = state_of(ctx)
    store = state.store
    now = time.time()
    decay = store.config.decay
    doomed = gc_candidates(store.list(status=MemoryStatus.ACTIVE), now, decay)
    if limit is not None:
        doomed = doomed[:limit]
    ids = [m.id for _, m in doomed]
    if not dry_run:
        if archive_instead:
            store.put_many([replace(m, status=MemoryStatus.ARCHIVED) for _, m in doomed])
        else:
            # Into gc's graveyard first, as the pipeline's gc does: undo_consolidation(gc)
            # and memory_history find it there (deleted outright, it was lost).
            graveyard = Graveyard(state.settings.storage_path)
            for mid in ids:
                with store.writing():
                    memory = store.find(mid)
                    if memory is None:
                        continue
                    relations = store.relations(memory_id=mid)
                    graveyard.bury(memory, relations, now=now, cause=CAUSE)
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
        "freed_score_sum": round(sum(score for score, _ in doomed), 4),
        "memory_ids": ids[:20],
        "total_affected": len(ids),
        "message": f"{verb} {len(ids)} memories below the forget threshold "
        f"{decay.forget_threshold}",
    }


def register(server: MCPServer[ServerState], state: ServerState) -> None:
    """Add this module's tools (their handlers reach the state through their ctx)."""
    server.add_tool(gc, annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))


__all__ = ["gc", "register"]
