"""undo_consolidation and memory_history through a real MCP client (in-process)."""

from __future__ import annotations

import anyio
from mcp import Client
from mcp_helpers import error_text, make_settings, payload

from cortexgraph.agents.merge_ops import apply_plan, plan_merge
from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store

NOW = 1_760_000_000.0


def _call(tmp_path, *calls):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def test_mcp_undo_merge_then_history(tmp_path):
    store = open_store(tmp_path / "stm")
    a = store.save("Invoices live in PostgreSQL", now=NOW)
    b = store.save("The billing invoices are kept in PostgreSQL", now=NOW)
    plan = plan_merge([a, b], 0.9, NOW + 10, 0.2, 0.8)
    apply_plan(store, plan, NOW + 10, issue_id=None)
    [undone, history, again] = _call(
        tmp_path,
        ("undo_consolidation", {"action": "merge", "memory_id": plan.memory.id}),
        ("memory_history", {"memory_id": a.id}),
        ("undo_consolidation", {"action": "merge", "memory_id": plan.memory.id}),
    )
    out = payload(undone)
    assert sorted(out["memory_ids"]) == sorted([a.id, b.id])
    events = [e["event"] for e in payload(history)["events"]]
    assert events == ["saved", "merged into", "merge undone"]
    assert "Not found" in error_text(again)  # the merged memory is gone now


def test_mcp_undo_errors_say_what_to_fix(tmp_path):
    store = open_store(tmp_path / "stm")
    a = store.save("Invoices live in PostgreSQL", now=NOW)
    b = store.save("The billing invoices are kept in PostgreSQL", now=NOW)
    plan = plan_merge([a, b], 0.9, NOW + 10, 0.2, 0.8)
    apply_plan(store, plan, NOW + 10, issue_id=None)
    [source, active, promote, unknown] = _call(
        tmp_path,
        ("undo_consolidation", {"action": "archive", "memory_id": a.id}),
        ("undo_consolidation", {"action": "merge", "memory_id": a.id}),
        ("undo_consolidation", {"action": "promote", "memory_id": plan.memory.id}),
        ("memory_history", {"memory_id": "nope"}),
    )
    assert f"undo merge {plan.memory.id}" in error_text(source)
    assert f"merged into {plan.memory.id}: undo that one" in error_text(active)
    assert "not promoted" in error_text(promote)
    assert "Not found" in error_text(unknown)
    assert open_store(tmp_path / "stm").get(a.id).status.value == "archived"


def test_mcp_undo_refusals_are_typed_refusals_not_internal_names(tmp_path):
    """A refused undo reached the client as "AgentError: memory ... is active, not archived",
    an internal class name, where unpromote's same refusal read "Invalid input: ...". Every
    refusal of undo_consolidation now reads as the kind it is."""
    store = open_store(tmp_path / "stm")
    a = store.save("Invoices live in PostgreSQL", now=NOW)
    results = _call(
        tmp_path,
        ("undo_consolidation", {"action": "archive", "memory_id": a.id}),
        ("undo_consolidation", {"action": "merge", "memory_id": a.id}),
        ("undo_consolidation", {"action": "gc", "memory_id": a.id}),
        ("undo_consolidation", {"action": "promote", "memory_id": a.id}),
    )
    for result in results:
        text = error_text(result)
        assert "AgentError" not in text and "Invalid input: memory" in text, text
