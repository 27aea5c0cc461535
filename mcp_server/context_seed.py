"""LatentContext's shapes (seed 002) on our context tools: its memory type names, its
``filters`` object, and its ``memory_store`` tool, mapped to ours or refused with a message
naming what to send; none is ignored.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import Field, StrictFloat

from cortexgraph.mcp_server.arguments import check_content
from cortexgraph.mcp_server.entity_reading import read_entities_soon
from cortexgraph.mcp_server.errors import tool_errors
from cortexgraph.mcp_server.state import ServerContext, state_of
from cortexgraph.retrieval.core import set_core
from cortexgraph.retrieval.graph import memory_ref
from cortexgraph.retrieval.temporal import after_save
from cortexgraph.storage.errors import InvalidInputError

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


def merge_filters(given: dict[str, Any], filters: dict[str, Any] | None) -> dict[str, Any]:
    """The top-level filter arguments with LatentContext's ``filters`` object folded in: an
    unknown key, an over-long value or a key given twice with two values is refused."""
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
    return given


def seed_tiers(types: Any) -> tuple[list[str] | None, list[str]]:
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
    read_entities_soon(state)
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


__all__ = ["FILTER_KEYS", "SEED_TYPES", "SeedType", "StoreType", "memory_store", "merge_filters"]
