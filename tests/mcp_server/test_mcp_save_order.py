"""Newest-first listings through the SDK's in-process client: a burst of saves in one second
(created_at's unit) lists the later save first, not in the random ids' order."""

from __future__ import annotations

import json
import time

import anyio
from mcp import Client
from mcp_helpers import make_settings, payload

from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store

GROUPS, PER_SECOND = 4, 5  # chance the random ids' order passes: (1/5!)^4


def seed_bursts(tmp_path) -> list[str]:
    """Groups of saves sharing one second each; the ids newest first (later save first)."""
    store = open_store(tmp_path / "stm")
    base = float(int(time.time()) - 3600)
    newest_first: list[str] = []
    for g in range(GROUPS):
        burst = [
            store.save(f"burst {g} item {i} about topic {g * PER_SECOND + i}", now=base - g * 60)
            for i in range(PER_SECOND)
        ]
        newest_first += [m.id for m in reversed(burst)]
    return newest_first


def test_read_graph_and_the_graph_resource_list_a_seconds_later_save_first(tmp_path):
    expected = seed_bursts(tmp_path)

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            graph = payload(await client.call_tool("read_graph", {"page_size": 100}))
            resource = await client.read_resource("cortexgraph://graph")
            return graph, json.loads(resource.contents[0].text)

    graph, resource = anyio.run(go)
    listed = ([m["id"] for m in graph["memories"]], [m["id"] for m in resource["memories"]])
    assert listed == (expected, expected)
