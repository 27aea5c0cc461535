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


def test_mcp_run_after_no_change_opens_nothing_and_a_save_reopens_it(tmp_path):
    """The server's own saves change the store files: the next run looks at them."""
    store = open_store(tmp_path / "stm")
    for text in ("Invoices live in PostgreSQL", "The team lunch is on Friday at noon"):
        store.save(text)
    first, again, preview, saved, after = (
        payload(r)
        for r in _call(
            tmp_path,
            ("run_consolidation", {"dry_run": False}),
            ("run_consolidation", {"dry_run": False}),
            ("run_consolidation", {"dry_run": True}),
            ("save_memory", {"content": "Dana moved the standup to ten"}),
            ("run_consolidation", {"dry_run": False}),
        )
    )
    assert saved["success"] is True
    not_opened = "store not opened"
    assert set(again) == set(first)  # the same shape
    summary = again["incremental"]["summary"]
    assert any(not_opened in n for n in again["notes"])
    assert set(again["summaries"].values()) == {summary}
    assert summary in again["report_markdown"]
    assert preview["dry_run"] is True and any(not_opened in n for n in preview["notes"])
    assert not any(not_opened in n for n in after["notes"])
    assert after["incremental"]["changed"] == 1
