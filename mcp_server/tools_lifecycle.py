"""The memory lifecycle (LatentContext): memory_status, memory_wipe, memory_compress, and the
middleware that records the session (its resource, cortexgraph://session/current, is in
``resources``).

memory_compress writes a summary memory of this session (what it saved) or of a period (the
memories created in the last ``days``) that replaces nothing: it links to its sources with
``consolidated_from`` and is ranked like any memory. When the client supports MCP sampling the
client's own model writes the summary (a standalone sampling request before MCP 2026-07-28, an
input request in the tool result from then on); otherwise, and whenever the client's model
fails, is refused or answers nothing, it is extractive: the sentences closest to the centroid of
the sources' sentence embeddings (MiniLM, or TF-IDF with embeddings off), no LLM. The result
says which (``method``) and, for an extractive one, why (``reason``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Resolve, Sample
from mcp.shared.message import ServerMessageMetadata
from mcp_types import (
    ClientCapabilities,
    CreateMessageRequest,
    CreateMessageResult,
    SamplingCapability,
    SamplingMessage,
    TextContent,
    ToolAnnotations,
)
from mcp_types.version import is_version_at_least
from pydantic import Field, StrictFloat, StrictInt

from cortexgraph.agents.summary import (
    extractive_summary,
    period_memories,
    save_summary,
    summary_sources,
)
from cortexgraph.mcp_server.collaborators import embedder_for
from cortexgraph.mcp_server.errors import tool_errors
from cortexgraph.mcp_server.lifecycle_ops import status_report, wipe_store
from cortexgraph.mcp_server.state import ServerContext, ServerState, state_of
from cortexgraph.mcp_server.views import preview
from cortexgraph.retrieval.temporal import is_superseded
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import Memory, MemoryStatus

Scope = Literal["session", "epoch", "working"]  # working: LatentContext's name for session
SAMPLING_MAX_TOKENS = 400
SAMPLING_TIMEOUT_S = 120.0  # a client's model that has not answered by then is not waited for
INPUT_REQUIRED_VERSION = "2026-07-28"  # from here the SDK carries sampling in the tool result
log = logging.getLogger(__name__)


@tool_errors
def memory_status(ctx: ServerContext) -> dict[str, Any]:
    """The memory system's state: counts by tier, status and entity type, size on disk, the last
    consolidation run, and the state of the indexes."""
    state = state_of(ctx)
    return {"success": True, **status_report(state)}


@tool_errors
def memory_wipe(
    ctx: ServerContext,
    confirm: Annotated[
        str,
        Field(
            description="The storage path, repeated exactly (see "
            "memory_status), to confirm deleting everything in it.",
            max_length=4096,
        ),
    ],
    include_vault_notes: Annotated[
        bool,
        Field(
            description="Also delete the vault notes "
            "cortexgraph wrote; a note a person edited is "
            "always kept."
        ),
    ] = False,
) -> dict[str, Any]:
    """Delete every memory, every relation and the index files of this store (and, if asked,
    the unedited notes cortexgraph wrote to the vault). Cannot be undone."""
    state = state_of(ctx)
    result = wipe_store(state, confirm, include_vault_notes)
    state.session_log.forget_all()
    return {"success": True, **result}


def _sources(state: ServerState, scope: str, days: float, now: float) -> list[Memory]:
    store = state.store
    if scope == "session":
        log = state.session_log.snapshot()
        found = [store.find(i) for i in log["saved"]]
        memories = [m for m in found if m is not None]
        if not memories:  # saved by another path while this server ran
            memories = [
                m
                for m in store.list(status=MemoryStatus.ACTIVE)
                if m.created_at >= log["started_at"]
            ]
    else:
        memories = period_memories(store, days, now)
    # What memory_forget deprecated or corrected (and whatever a later fact superseded) is
    # history, not what the session established.
    memories = [m for m in memories if not (is_superseded(m) or m.meta.extra.get("deprecated"))]
    return summary_sources(memories, scope)


def _prompt(scope: str, memories: list[Memory]) -> str:
    listing = "\n".join(f"- {preview(m.content, 600)}" for m in memories)
    what = "this conversation session" if scope == "session" else "this period"
    return (
        f"Summarise what the user and assistant established in {what}, from these memories. "
        f"Keep decisions, preferences, facts, open questions and action items; drop "
        f"repetition. Plain sentences, at most 150 words.\n\n{listing}"
    )


@dataclass(frozen=True, slots=True)
class NoSample:
    """Why the client's model wrote no summary (the tool then writes an extractive one)."""

    reason: str


async def ask_client_model(
    ctx: ServerContext, scope: str, days: float = 7.0
) -> Sample | CreateMessageResult | NoSample:
    """Resolver: the client's model's summary, or why there is none. From MCP 2026-07-28 a
    ``Sample`` (the SDK asks in the tool result; a client that refuses ends the call on its own
    side); before, a sampling request sent here, whose failure falls back to extractive."""
    import anyio.to_thread

    try:
        session = ctx.request_context.session
        able = session.check_client_capability(ClientCapabilities(sampling=SamplingCapability()))
    except (ValueError, AttributeError):
        return NoSample("no client session to ask")
    if not able:
        return NoSample("the client does not offer MCP sampling")
    state = state_of(ctx)
    memories = await anyio.to_thread.run_sync(_sources, state, scope, days, _window_now())
    if not memories:
        return NoSample("nothing to summarise")
    sample = Sample(
        [
            SamplingMessage(
                role="user", content=TextContent(type="text", text=_prompt(scope, memories))
            )
        ],
        max_tokens=SAMPLING_MAX_TOKENS,
        system_prompt="You write concise, faithful memory summaries.",
    )
    version = ctx.protocol_version
    if version is not None and is_version_at_least(version, INPUT_REQUIRED_VERSION):
        return sample
    try:
        return await session.send_request(
            CreateMessageRequest(params=sample.params),
            CreateMessageResult,
            request_read_timeout_seconds=SAMPLING_TIMEOUT_S,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
        )
    except Exception as exc:  # whatever the client's model did, the user still gets a summary
        log.info("cortexgraph: memory_compress: the client's sampling failed: %s", exc)
        detail = " ".join((str(exc) or type(exc).__name__).split())  # MCPError: its message
        return NoSample(f"the client's sampling failed: {detail[:200]}")


def _window_now() -> float:
    # The same window on every round of a sampling exchange (a minute's resolution).
    return float(int(time.time() // 60 * 60 + 60))


@tool_errors
def memory_compress(
    ctx: ServerContext,
    scope: Annotated[
        Scope,
        Field(
            description="session (or LatentContext's working): what this session saved; "
            "epoch: the memories created in the last `days`."
        ),
    ],
    days: Annotated[
        StrictFloat,
        Field(description="With scope=epoch: the period, in days (default 7).", gt=0, le=3650),
    ] = 7.0,
    max_sentences: Annotated[
        StrictInt,
        Field(description="Length of an extractive summary (sentences, 1-20).", ge=1, le=20),
    ] = 5,
    sampled: Annotated[CreateMessageResult | NoSample | None, Resolve(ask_client_model)] = None,
) -> dict[str, Any]:
    """Write a summary memory of this session or of a period. It replaces nothing: its sources
    stay, linked from it by consolidated_from relations. Uses the client's model (MCP sampling)
    when offered, else an extractive summary."""
    state = state_of(ctx)
    scope = "session" if scope == "working" else scope  # the session's working memory
    # a sampled summary covers the window its prompt was written from
    now = _window_now() if isinstance(sampled, CreateMessageResult) else time.time()
    memories = _sources(state, scope, days, now)
    if not memories:
        raise InvalidInputError(
            f"nothing to compress: no memories in this {scope}"
            + ("" if scope == "session" else f" (last {days:g} days)")
        )
    text, method, note, why = "", "extractive", "", "no sampling result"
    if isinstance(sampled, NoSample):
        why = sampled.reason
    elif isinstance(sampled, CreateMessageResult):
        if isinstance(sampled.content, TextContent) and sampled.content.text.strip():
            text = sampled.content.text.strip()
            method, note, why = "sampling", f"written by the client's model ({sampled.model})", ""
        else:
            why = f"the client's model ({sampled.model}) returned no text"
    if not text:
        embedder, note = embedder_for(state)
        text = extractive_summary([m.content for m in memories], embedder, max_sentences)
    summary = save_summary(state.store, text, memories, scope=scope, method=method)
    return {
        "success": True,
        "memory_id": summary.id,
        "scope": scope,
        "method": method,
        "reason": why,  # extractive: why the client's model did not write it
        "note": note,
        "sources": len(memories),
        "source_ids": [m.id for m in memories][:100],
        "content": summary.content,
    }


def register(server: MCPServer[ServerState], state: ServerState) -> None:
    from cortexgraph.mcp_server.session_log import session_middleware

    """Add the lifecycle tools and the middleware that records the session's calls."""
    server.middleware.append(session_middleware(state.session_log, state.subscriptions))
    server.add_tool(memory_status, annotations=ToolAnnotations(read_only_hint=True))
    server.add_tool(
        memory_wipe, annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True)
    )
    server.add_tool(
        memory_compress, annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False)
    )


__all__ = ["memory_compress", "memory_status", "memory_wipe", "register"]
