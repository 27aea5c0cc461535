"""1.x result fields a script reads, through the SDK's in-process MCP client (1.x reference:
shared/seeds/003): consolidate_memories' preview, from/to/type on relations, open_memories'
count and promoted_at/promoted_to, save_memory's has_embedding, touch_memory's message."""

from __future__ import annotations

import re

import anyio
from compat_helpers import PARAPHRASES, make_settings, payload
from mcp import Client

from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store


def test_consolidate_preview_has_the_1x_previews(tmp_path):
    store = open_store(tmp_path / "stm")
    ids = [
        store.save(t, tags=["style", f"t{k}"], entities=["Python"]).id
        for k, t in enumerate(PARAPHRASES)
    ]
    store.save("The team lunch is on Friday at noon", tags=["social"])

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            found = payload(await client.call_tool("cluster_memories", {"threshold": 0.3}))
            [cid] = [c["id"] for c in found["clusters"] if set(c["memory_ids"]) == set(ids)]
            return cid, payload(await client.call_tool("consolidate_memories", {"cluster_id": cid}))

    cid, out = anyio.run(go)
    assert out["mode"] == "preview" and out["auto_detect"] is False
    assert out["candidates_found"] == 1
    [p] = out["previews"]
    assert p["cluster_id"] == cid and p["memory_count"] == 3 and 0 < p["cohesion"] <= 1
    assert "tabs" in p["merged_content_preview"]
    assert p["merged_entities"] == ["Python"]
    assert set(p["merged_tags"]) == {"style", "t0", "t1", "t2"}
    assert p["calculated_strength"] >= 1.0
    assert out["results"][0]["status"] == "previewed"  # today's fields stay


def test_relations_memories_and_messages_carry_the_1x_fields(tmp_path):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:

            async def call(tool, args):
                return payload(await client.call_tool(tool, args))

            a = await call("save_memory", {"content": "We chose PostgreSQL for billing"})
            b = await call("save_memory", {"content": "Billing runs nightly at 2am"})
            rel = await call(
                "create_relation",
                {
                    "from_memory_id": a["memory_id"],
                    "to_memory_id": b["memory_id"],
                    "relation_type": "supports",
                    "strength": 0.9,
                },
            )
            touched = await call("touch_memory", {"memory_id": a["memory_id"]})
            graph = await call("read_graph", {})
            opened = await call("open_memories", {"memory_ids": [a["memory_id"], b["memory_id"]]})
            return a, b, rel, touched, graph, opened

    a, b, rel, touched, graph, opened = anyio.run(go)
    assert a["has_embedding"] is False  # embeddings off in these settings: keyword search only
    assert (rel["from"], rel["to"], rel["type"]) == (a["memory_id"], b["memory_id"], "supports")
    assert rel["message"] == f"Relation created: {a['memory_id']} --[supports]--> {b['memory_id']}"
    assert re.fullmatch(r"Memory reinforced\. Score: \d\.\d\d -> \d\.\d\d", touched["message"])
    [g] = graph["relations"]
    assert (g["from"], g["to"], g["type"]) == (a["memory_id"], b["memory_id"], "supports")
    assert g["from_memory_id"] == a["memory_id"]  # today's names stay beside 1.x's
    assert opened["count"] == 2
    by_id = {m["id"]: m for m in opened["memories"]}
    first = by_id[a["memory_id"]]
    assert first["promoted_at"] is None and first["promoted_to"] is None
    [out] = first["relations"]["outgoing"]
    assert (out["to"], out["type"], out["strength"]) == (b["memory_id"], "supports", 0.9)
    [inc] = by_id[b["memory_id"]]["relations"]["incoming"]
    assert (inc["from"], inc["type"]) == (a["memory_id"], "supports")


def test_save_memory_says_has_embedding_when_embeddings_are_on(tmp_path):
    async def go():
        settings = make_settings(tmp_path, enable_embeddings=True)
        async with Client(build_server(settings)) as client:
            return payload(await client.call_tool("save_memory", {"content": "Tabs, not spaces"}))

    assert anyio.run(go)["has_embedding"] is True
