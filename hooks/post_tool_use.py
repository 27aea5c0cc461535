"""PostToolUse: reinforce memories Claude opened, and link memories used together (co-access).

Runs only after cortexgraph's ``open_memories`` (the hooks.json matcher and ``TOOL_RE``).
- ``open_memories``: opening a memory by id is using it, so each opened memory is reinforced as
  ``observe_memory_usage`` does (last_used, use_count, review bookkeeping); the model need not
  remember to call it.
- Co-access: the ids opened in this session are kept in a small state file; each pair of
  memories opened in the same session gets a ``related`` relation (metadata source
  "co-access"), and a pair seen again in a later session strengthens it. Search results are
  neither: appearing in a result list is not being used, so the hook does not run after a
  search (it once logged their ids in a list nothing read: a process per search for nothing).
Reads and writes go through ``storage.few_records.FewRecords``, under the store's lock: only
the lines of the memories and relations at hand are read and built, never the whole store (a
JSONLStore's open cost 0.16 CPU s per call on a 10k store, 0.4 s on a 100k one). It never
adds context (no output).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from itertools import combinations
from typing import Any

from cortexgraph.hooks.contract import HookInput, run_hook
from cortexgraph.hooks.runtime import HookRuntime, load_runtime
from cortexgraph.storage.models import Relation, new_id

EVENT = "PostToolUse"
TOOL_RE = re.compile(r"^mcp__.*cortexgraph.*__open_memories$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
MAX_LINKED = 10  # memories per session that get co-access links (pairs grow quadratically)
CO_ACCESS_STRENGTH = 0.3
CO_ACCESS_STEP = 0.1


def memory_ids(response: Any) -> list[str]:
    """Ids of memory records in a tool response (structured, or JSON inside text blocks)."""
    return list(dict.fromkeys(_walk(response, depth=0)))


def _walk(value: Any, depth: int) -> Iterator[str]:
    if depth > 6:
        return
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in "{[":
            try:
                yield from _walk(json.loads(text), depth + 1)
            except ValueError:
                return
        return
    if isinstance(value, list):
        for item in value:
            yield from _walk(item, depth + 1)
    elif isinstance(value, dict):
        mid = value.get("id")
        if isinstance(mid, str) and _UUID.match(mid) and "content" in value:
            yield mid
        for key, item in value.items():
            if key in (
                "text",
                "results",
                "memories",
                "items",
                "content",
                "structuredContent",
                "result",
                "stm",
                "data",
            ):
                yield from _walk(item, depth + 1)


def record_usage(runtime: HookRuntime, inp: HookInput, now: float) -> dict[str, int]:
    tool = TOOL_RE.match(inp.tool_name)
    if tool is None:
        return {"reinforced": 0, "linked": 0}
    ids = memory_ids(inp.tool_response)
    if not ids:
        return {"reinforced": 0, "linked": 0}
    state = runtime.read_state(inp.session_id, "coaccess")
    opened_before = list(state.get("opened", []))
    from cortexgraph.storage.few_records import FewRecords

    ts = int(now)
    # Read and written under one hold of the store's lock (no touch in between is lost).
    with FewRecords(runtime.storage_path, runtime.store_config) as store:
        found = store.modify_many(
            ids,
            lambda m: replace(
                m,
                last_used=ts,
                use_count=m.use_count + 1,
                last_review_at=ts,
                review_count=m.review_count + 1,
                review_priority=0.0,
            ),
        )
        opened = list(dict.fromkeys([*opened_before, *(m.id for m in found)]))
        # a memory opened earlier this session may have been deleted since: no link to it
        live = [m.id for m in store.find_many(opened[-MAX_LINKED:])]
        linked = link_co_accessed(store, live, [m.id for m in found], ts, inp.session_id)
    runtime.write_state(inp.session_id, "coaccess", {"opened": opened})
    return {"reinforced": len(found), "linked": linked}


def link_co_accessed(
    store: Any, opened: list[str], new: list[str], now: int, session_id: str
) -> int:
    """A ``related`` relation per pair involving a newly opened memory; returns pairs touched."""
    new_set = set(new)
    pairs = [
        (a, b) for a, b in combinations(sorted(set(opened)), 2) if a in new_set or b in new_set
    ]
    if not pairs:
        return 0
    existing: dict[frozenset[str], Relation] = {}
    for mid in new_set:
        for r in store.relations(memory_id=mid, relation_type="related"):
            if r.metadata.get("source") == "co-access":
                existing[frozenset((r.from_memory_id, r.to_memory_id))] = r
    touched = 0
    for a, b in pairs:
        rel = existing.get(frozenset((a, b)))
        if rel is None:
            store.put_relation(
                Relation(
                    new_id(),
                    a,
                    b,
                    "related",
                    CO_ACCESS_STRENGTH,
                    now,
                    {"source": "co-access", "sessions": [session_id]},
                )
            )
        else:
            sessions = list(rel.metadata.get("sessions", []))
            if session_id in sessions:
                continue  # once per session: re-opening is not new evidence
            store.put_relation(
                replace(
                    rel,
                    strength=min(1.0, rel.strength + CO_ACCESS_STEP),
                    metadata={**rel.metadata, "sessions": [*sessions, session_id][-20:]},
                )
            )
        touched += 1
    return touched


def handle(inp: HookInput, now: float | None = None) -> dict[str, Any] | None:
    if TOOL_RE.match(inp.tool_name) is None:
        return None
    record_usage(load_runtime(inp), inp, time.time() if now is None else now)
    return None  # bookkeeping only: nothing for the model


def main() -> int:
    return run_hook(EVENT, handle)


__all__ = ["TOOL_RE", "handle", "link_co_accessed", "main", "memory_ids", "record_usage"]
