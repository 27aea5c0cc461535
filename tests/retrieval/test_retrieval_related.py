"""Entities from conversations in graph_query, and related memories in unified search."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import Client

from cortexgraph.mcp_server.app import build_server
from cortexgraph.retrieval.graph import graph_query
from cortexgraph.vault_sync.unified_search import search_unified

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mcp_server"))
from mcp_helpers import make_settings, payload

NOW = 1_760_000_000


def test_graph_query_finds_a_person_named_in_a_saved_memory(tmp_path):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            saved = payload(
                await client.call_tool(
                    "save_memory", {"content": "Alice leads the payments team at Acme Corp."}
                )
            )
            alice = payload(await client.call_tool("graph_query", {"entity": "Alice"}))
            acme = payload(await client.call_tool("graph_query", {"entity": "Acme Corp."}))
            return saved, alice, acme

    saved, alice, acme = anyio.run(go)
    for result in (alice, acme):
        assert saved["memory_id"][:8] in result["graph"], result


def test_graph_query_finds_a_name_in_the_text_before_entities_are_read(store):
    m = store.save(
        "[8 May] Melanie: Luna and Oliver are so playful!", entities=["melanie"], now=NOW
    )
    store.save("Lunar eclipse tonight, said the news", now=NOW)
    result = graph_query(store, "Luna")
    assert result.found and set(result.memory_ids.values()) == {m.id}


def test_unified_search_brings_in_the_related_memory_of_a_top_hit(store):
    pets = store.save("Melanie: our pets are so sweet, Luna and Oliver", now=NOW)
    later = store.save("We got another cat last week, called Bailey", now=NOW + 86_400 * 30)
    for i in range(30):
        store.save(f"Caroline: filler turn {i} about the weather and the garden", now=NOW)
    query = "What are the names of Melanie's pets Luna and Oliver?"

    def ids():
        return [r.memory_id for r in search_unified(store, None, query, limit=5, now=NOW)]

    assert pets.id in ids() and later.id not in ids()
    store.add_relation(pets.id, later.id, "related", strength=0.6, now=NOW)
    # off by default (its whole-split ablation cost R@5 and MRR): the link alone adds nothing
    assert later.id not in ids()
    found = search_unified(store, None, query, limit=5, now=NOW, verbose=True, related_weight=0.15)
    by_id = {r.memory_id: r for r in found}
    assert later.id in by_id and by_id[later.id].details["related_bonus"] > 0
    assert found[0].memory_id == pets.id  # the direct hit stays above what it brought in
    none = search_unified(store, None, query, limit=5, now=NOW, related_weight=0.0)
    assert later.id not in {r.memory_id for r in none}
