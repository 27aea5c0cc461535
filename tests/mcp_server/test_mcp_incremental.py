"""The MCP ``run_consolidation`` tool runs incrementally (issue 32) and says when nothing changed."""

from __future__ import annotations

import anyio
from mcp import Client
from mcp_helpers import make_settings, payload

from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store


def _call(tmp_path, *calls):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def test_mcp_run_after_no_change_says_nothing_changed(tmp_path):
    store = open_store(tmp_path / "stm")
    for text in ("Invoices live in PostgreSQL", "The team lunch is on Friday at noon"):
        store.save(text)
    first, again, full = _call(
        tmp_path,
        ("run_consolidation", {"dry_run": False}),
        ("run_consolidation", {"dry_run": False}),
        ("run_consolidation", {"dry_run": False, "full": True}),
    )
    assert payload(first)["incremental"] is None  # the first run is a full one
    out = payload(again)
    assert out["incremental"]["nothing_changed"] is True
    assert "nothing changed since the last run at" in out["report_markdown"]
    assert payload(full)["incremental"] is None
