"""undo_consolidation, memory_history and the memory resource take what the other id-taking
tools take: a full id or a unique prefix of 8+ characters (retrieval.core.resolve_memory_id),
with its typed errors for an ambiguous or unknown prefix. They took full ids only: a prefix
copied from memory_retrieve's output answered "Not found"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_helpers import error_text, make_settings, payload

from cortexgraph.agents.merge_ops import apply_plan, plan_merge
from cortexgraph.agents.undo import collect_garbage, undo_merge_of
from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store
from cortexgraph.storage.decay import DAY
from cortexgraph.storage.graveyard import Graveyard

NOW = 1_760_000_000.0
TWINS = ("abcdef01-1111-4222-8333-444444444444", "abcdef01-2222-4222-8333-444444444444")


def _calls(tmp_path: Path, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    async def go() -> list[Any]:
        async with Client(build_server(make_settings(tmp_path))) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def _read(tmp_path: Path, uri: str) -> str:
    async def go() -> str:
        async with Client(build_server(make_settings(tmp_path))) as client:
            try:
                result = await client.read_resource(uri)
            except MCPError as exc:
                return f"error: {exc}"
            return str(result.contents[0].text)

    return anyio.run(go)


def _twins(store: Any) -> None:
    first = store.save("twin one", now=NOW)
    for twin_id in TWINS:
        store.put(first.with_changes(id=twin_id, content=f"twin {twin_id[9:13]}"))
    store.delete(first.id)


def test_undo_and_history_take_a_unique_prefix(tmp_path: Path) -> None:
    store = open_store(tmp_path / "stm")
    a = store.save("Invoices live in PostgreSQL", now=NOW)
    b = store.save("The billing invoices are kept in PostgreSQL", now=NOW)
    plan = plan_merge([a, b], 0.9, NOW + 10, 0.2, 0.8)
    apply_plan(store, plan, NOW + 10, issue_id=None)
    [undone, history] = _calls(
        tmp_path,
        ("undo_consolidation", {"action": "merge", "memory_id": plan.memory.id[:8]}),
        ("memory_history", {"memory_id": a.id[:8]}),
    )
    assert sorted(payload(undone)["memory_ids"]) == sorted([a.id, b.id])
    out = payload(history)
    assert out["memory_id"] == a.id
    assert [e["event"] for e in out["events"]] == ["saved", "merged into", "merge undone"]


def test_undo_gc_and_history_take_a_prefix_of_what_gc_deleted(tmp_path: Path) -> None:
    store = open_store(tmp_path / "stm")
    old = store.save("the fax number of the old office", now=NOW)
    yard = Graveyard(tmp_path / "stm")
    collect_garbage(store, [old.id], delete=True, now=NOW, grace_days=7, graveyard=yard)
    collect_garbage(store, [], delete=True, now=NOW + 8 * DAY, grace_days=7, graveyard=yard)
    assert store.find(old.id) is None
    [history, undone] = _calls(
        tmp_path,
        ("memory_history", {"memory_id": old.id[:8]}),
        ("undo_consolidation", {"action": "gc", "memory_id": old.id[:10]}),
    )
    assert "deleted by gc" in [e["event"] for e in payload(history)["events"]]
    assert payload(undone)["memory_ids"] == [old.id]


def test_a_deleted_merged_memory_keeps_its_history_by_full_id(tmp_path: Path) -> None:
    """An undone merge deletes the merged memory; its stored lines still tell its history, so
    a full id that no prefix matches any more is still asked of history_of."""
    store = open_store(tmp_path / "stm")
    a = store.save("Invoices live in PostgreSQL", now=NOW)
    b = store.save("The billing invoices are kept in PostgreSQL", now=NOW)
    plan = plan_merge([a, b], 0.9, NOW + 10, 0.2, 0.8)
    apply_plan(store, plan, NOW + 10, issue_id=None)
    undo_merge_of(store, plan.memory.id, now=NOW + 20, cause="test")
    [history] = _calls(tmp_path, ("memory_history", {"memory_id": plan.memory.id}))
    assert payload(history)["events"][0]["event"] == "merged from"


@pytest.mark.parametrize("tool", ["undo_consolidation", "memory_history"])
def test_ambiguous_and_unknown_prefixes_are_typed_errors(tmp_path: Path, tool: str) -> None:
    _twins(open_store(tmp_path / "stm"))
    extra = {"action": "archive"} if tool == "undo_consolidation" else {}
    [ambiguous, unknown, short] = _calls(
        tmp_path,
        (tool, {**extra, "memory_id": "abcdef01"}),
        (tool, {**extra, "memory_id": "12345678"}),
        (tool, {**extra, "memory_id": "abcd"}),
    )
    assert "Invalid input" in error_text(ambiguous) and "ambiguous" in error_text(ambiguous)
    assert "Not found" in error_text(unknown) and "12345678" in error_text(unknown)
    assert "Not found" in error_text(short)


def test_the_memory_resource_takes_a_unique_prefix(tmp_path: Path) -> None:
    store = open_store(tmp_path / "stm")
    m = store.save("We chose PostgreSQL 16 for billing", now=NOW)
    _twins(store)
    view = json.loads(_read(tmp_path, f"cortexgraph://memory/{m.id[:8]}"))
    assert view["id"] == m.id and view["content"] == "We chose PostgreSQL 16 for billing"
    assert "ambiguous" in _read(tmp_path, "cortexgraph://memory/abcdef01")
    assert "no memory" in _read(tmp_path, "cortexgraph://memory/12345678")


def test_every_tool_that_acts_on_one_stored_memory_takes_a_unique_prefix(tmp_path: Path) -> None:
    """touch_memory, create_relation, open_memories, observe_memory_usage and promote_memory
    answered "Not found" for the 8-character prefix the other tools take."""
    store = open_store(tmp_path / "stm")
    a = store.save("We chose PostgreSQL 16 for billing", now=NOW)
    b = store.save("Billing runs nightly at 02:00", now=NOW)
    [touched, related, opened, observed, promoted] = _calls(
        tmp_path,
        ("touch_memory", {"memory_id": a.id[:8]}),
        (
            "create_relation",
            {"from_memory_id": a.id[:9], "to_memory_id": b.id[:8], "relation_type": "related"},
        ),
        ("open_memories", {"memory_ids": [a.id[:8], b.id]}),
        ("observe_memory_usage", {"memory_ids": [b.id[:8]]}),
        ("promote_memory", {"memory_id": a.id[:8], "dry_run": True, "force": True}),
    )
    assert payload(touched)["memory_id"] == a.id
    assert open_store(tmp_path / "stm").get(a.id).use_count == 1
    rel = payload(related)
    assert (rel["from"], rel["to"]) == (a.id, b.id)
    assert [m["id"] for m in payload(opened)["memories"]] == [a.id, b.id]
    assert [r["id"] for r in payload(observed)["results"]] == [b.id]
    assert payload(promoted)["promoted_ids"] == [a.id]


@pytest.mark.parametrize(
    "call",
    [
        ("touch_memory", {}),
        ("create_relation", {"to_memory_id": "MID", "relation_type": "related"}),
        ("open_memories", {}),
        ("observe_memory_usage", {}),
        ("promote_memory", {"dry_run": True}),
    ],
    ids=lambda c: c[0],
)
def test_an_ambiguous_prefix_is_refused_by_every_tool(tmp_path: Path, call) -> None:
    store = open_store(tmp_path / "stm")
    other = store.save("a memory to relate to", now=NOW)
    _twins(store)
    name, extra = call
    key = {"create_relation": "from_memory_id", "open_memories": "memory_ids"}.get(name)
    key = key or ("memory_ids" if name == "observe_memory_usage" else "memory_id")
    value: Any = ["abcdef01"] if key == "memory_ids" else "abcdef01"
    args = {k: (other.id if v == "MID" else v) for k, v in extra.items()}
    [answer] = _calls(tmp_path, (name, {**args, key: value}))
    assert "Invalid input" in error_text(answer) and "ambiguous" in error_text(answer)
