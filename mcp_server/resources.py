"""Resources (the session, the graph schema, stats, one memory, the paged graph) and the
memory system prompt."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from cortexgraph.activation.entities import entity_kind
from cortexgraph.mcp_server.entity_reading import entities_pending
from cortexgraph.mcp_server.errors import quote
from cortexgraph.mcp_server.snapshot_upkeep import snapshot_pending
from cortexgraph.mcp_server.state import ServerState
from cortexgraph.mcp_server.views import memory_view, paginate, preview
from cortexgraph.retrieval.core import resolve_memory_id
from cortexgraph.storage.errors import InvalidInputError, MemoryNotFoundError
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.storage.save_order import newest_first

GRAPH_PAGE_SIZE = 50

SYSTEM_PROMPT = """\
You have a temporal memory (cortexgraph). Memories fade with time unless they are used.

When to save (save_memory): the user states a preference, a decision, a fact about themselves,
their work or their projects that will matter in later conversations; a conclusion you reached
together. Write each memory so it stands on its own; add tags for the project and topic.
Do not save small talk, secrets (passwords, keys) or things true only for this conversation.

When to search (search_memory, or search_unified to include long-term notes): before answering
anything that may depend on earlier conversations ("what did we decide", "my usual setup",
names of people and projects), and when the user says "remember", "last time", "as I said".

Help deciding (analyze_message, analyze_for_recall): when unsure whether a user message is
worth saving, call analyze_message(message). Its action_recommendation says what to do:
MUST_SAVE - the user asked you to remember it: always call save_memory;
SHOULD_SAVE - a preference, decision or fact worth keeping: usually call save_memory;
DUPLICATE_DETECTED - a memory already says this: update or touch that one instead;
SHOULD_SEARCH - the user asks about the past: call search_memory first;
NONE - no strong signal: use your judgment.
Pass its suggested_entities, suggested_tags and suggested_strength to save_memory. Before
answering a question that may concern earlier conversations, analyze_for_recall(message) says
whether to search and suggests the query. Both read short follow-ups ("yes, do that") with the
messages before them. They assist; you decide.

After using memories in an answer, call observe_memory_usage with their ids and tags for the
current topic: this reinforces them (spaced repetition). Use touch_memory to keep one alive,
create_relation to link related memories, and promote_memory for ones that should be permanent.
"""


def register(server: MCPServer[ServerState], state: ServerState) -> None:
    """Add the resources (session, graph schema, stats, one memory, the paged graph), each also
    at LatentContext's memory:// address where it has one, and the memory system prompt."""
    store = state.resource_store
    log = state.session_log

    @server.resource(
        "cortexgraph://session/current",
        mime_type="application/json",
        description="What this server session saved and recalled.",
    )
    def session_current() -> str:
        s, snap = store(), log.snapshot()

        def views(ids: list[str]) -> list[dict[str, Any]]:
            found = [s.find(i) for i in ids[-100:]]
            return [
                {"id": m.id, "content": preview(m.content, 200), "tags": list(m.tags)}
                for m in found
                if m is not None
            ]

        return json.dumps(
            {
                "started_at": snap["started_at"],
                "saved": views(snap["saved"]),
                "recalled": views(snap["recalled"]),
                "tool_calls": snap["calls"],
            },
            ensure_ascii=False,
        )

    server.resource(  # LatentContext's address for the same view
        "memory://session/current",
        mime_type="application/json",
        description="Same as cortexgraph://session/current.",
    )(session_current)

    @server.resource(
        "cortexgraph://graph/schema",
        mime_type="application/json",
        description="Entity types and relation types in the memory graph, with "
        "counts (to write graph_query calls).",
    )
    def graph_schema() -> str:
        s = store()
        entities = Counter(e.lower() for m in s.list() for e in m.entities)
        kinds: Counter[str] = Counter()
        for entity, n in entities.items():
            kinds[entity_kind(entity)] += n
        relations = Counter(r.relation_type for r in s.relations())
        return json.dumps(
            {
                "entity_types": dict(kinds.most_common()),
                "entities": len(entities),
                "top_entities": dict(entities.most_common(25)),
                "relation_types": dict(relations.most_common()),
                "tags": dict(Counter(t for m in s.list() for t in m.tags).most_common(25)),
            },
            ensure_ascii=False,
        )

    server.resource(
        "memory://graph/schema",
        mime_type="application/json",
        description="Same as cortexgraph://graph/schema.",
    )(graph_schema)

    @server.resource(
        "cortexgraph://stats",
        mime_type="application/json",
        description="Counts of memories by status, relations, danger zone; this server's "
        "background work on saves not done yet (embeddings_pending, entities_pending, "
        "snapshot_pending).",
    )
    def stats() -> str:
        counts = store().stats().to_json()
        # Saves are embedded, and their vectors saved, by a background thread, their
        # entities read by a child process, and the store's snapshot refreshed after them:
        # 0 and false mean a run started now finds all three on disk (a benchmark waits).
        dense = state.dense
        counts["embeddings_pending"] = 0 if dense is None else dense.background_pending
        counts["entities_pending"] = entities_pending(state)
        counts["snapshot_pending"] = snapshot_pending(state)  # the store's load snapshot
        return json.dumps(counts)

    server.resource(  # LatentContext's address for the same counts
        "memory://stats", mime_type="application/json", description="Same as cortexgraph://stats."
    )(stats)

    @server.resource(
        "cortexgraph://memory/{memory_id}",
        mime_type="application/json",
        description="One memory with its relations (its full id or a unique prefix of 8+ characters).",
    )
    def memory(memory_id: str) -> str:
        s = store()
        try:
            m = s.get(resolve_memory_id(s, memory_id))
        except MemoryNotFoundError as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        except InvalidInputError as exc:
            raise ResourceError(str(exc)) from exc
        view = memory_view(m, preview_length=20_000, now=time.time(), decay=s.config.decay)
        view["relations"] = [r.to_json() for r in s.relations(m.id)][:100]
        return json.dumps(view, ensure_ascii=False)

    @server.resource(
        "cortexgraph://graph{?page}",
        mime_type="application/json",
        description="Active memories and their relations, 50 per page.",
    )
    def graph(page: str = "1") -> str:
        page_number = _page(page)
        s = store()
        memories = newest_first(s, s.list(status=MemoryStatus.ACTIVE))
        pg = paginate(memories, page_number, GRAPH_PAGE_SIZE)
        rels = {r.id: r.to_json() for m in pg.items for r in s.relations(m.id)}
        return json.dumps(
            {
                "memories": [memory_view(m, preview_length=300) for m in pg.items],
                "relations": list(rels.values())[:500],
                "pagination": pg.meta(),
            },
            ensure_ascii=False,
        )

    @server.prompt(name="memory_system_prompt", description="When to save, search and observe.")
    def memory_system_prompt() -> str:
        return SYSTEM_PROMPT


def _page(text: str) -> int:
    """The graph's ``page`` as the address spells it, read here: typed ``int``, the SDK
    answered "Error creating resource from template ..." for "abc", saying nothing of page."""
    try:
        number = int(text) if text.isascii() and text.isdigit() else 0
    except ValueError:  # more digits than int() reads
        number = 0
    if number < 1:
        raise ResourceError(f"page must be a whole number, 1 or more; got {quote(text)}")
    return number


__all__ = ["SYSTEM_PROMPT", "register"]
