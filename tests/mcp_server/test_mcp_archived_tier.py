"""Through the SDK's in-process MCP client (issue 34): what gc archived is still found by
search_unified, labelled ``"archived": true``; using it (observe_memory_usage, touch_memory)
makes it active again."""

from __future__ import annotations

import anyio
from mcp import Client
from mcp_helpers import make_settings, payload, seed_old_memory

from cortexgraph.mcp_server.app import build_server


def test_gc_archived_memory_is_found_labelled_and_using_it_revives_it(tmp_path):
    vet = seed_old_memory(tmp_path, "Biscuit the cat sees the vet on Fridays")
    vacuum = seed_old_memory(tmp_path, "Biscuit the cat hides from the vacuum cleaner")

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as c:
            gc = payload(await c.call_tool("gc", {"dry_run": False, "archive_instead": True}))
            before = payload(
                await c.call_tool("search_unified", {"query": "Biscuit the cat", "verbose": True})
            )
            payload(await c.call_tool("observe_memory_usage", {"memory_ids": [vet]}))
            payload(await c.call_tool("touch_memory", {"memory_id": vacuum}))
            after = payload(
                await c.call_tool("search_unified", {"query": "Biscuit the cat", "verbose": True})
            )
            active = payload(await c.call_tool("search_memory", {"query": "Biscuit the cat"}))
            return gc, before, after, active

    gc, before, after, active = anyio.run(go)
    assert gc["archived_count"] == 2
    assert {r["memory_id"]: r["archived"] for r in before["results"]} == {
        vet: True,
        vacuum: True,
    }
    assert {r["memory_id"]: r["archived"] for r in after["results"]} == {
        vet: False,
        vacuum: False,
    }
    assert {r["id"] for r in active["results"]} == {vet, vacuum}
