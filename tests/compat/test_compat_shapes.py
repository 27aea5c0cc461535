"""Result shapes a 1.x prompt or script reads, through the SDK's in-process MCP client."""

from __future__ import annotations

import re

import anyio
from compat_helpers import PARAPHRASES, make_settings, payload
from mcp import Client

from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store


def run(fn, *args):
    return anyio.run(fn, *args)


def test_observe_memory_usage_has_the_1x_fields(tmp_path):
    store = open_store(tmp_path / "stm")
    a = store.save("JWT for auth", tags=["security", "jwt"]).id
    b = store.save("API style guide", tags=["api", "backend"]).id

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return payload(
                await client.call_tool(
                    "observe_memory_usage",
                    {"memory_ids": [a, b], "context_tags": ["api", "backend"]},
                )
            )

    out = run(go)
    assert out["reinforced"] is True and out["count"] == 2 and out["cross_domain_count"] == 1
    by_id = {r["id"]: r for r in out["results"]}
    assert by_id[a]["status"] == "reinforced" and by_id[a]["cross_domain"] is True
    assert (by_id[a]["new_use_count"], by_id[a]["new_review_count"]) == (1, 1)
    assert by_id[a]["strength"] > 1.0 and by_id[b]["strength"] == 1.0
    assert by_id[b]["use_count"] == 1  # today's names stay beside 1.x's


def test_observe_memory_usage_honours_auto_reinforce_off(tmp_path):
    store = open_store(tmp_path / "stm")
    a = store.save("JWT for auth", tags=["security"]).id

    async def go():
        settings = make_settings(tmp_path, auto_reinforce=False)
        async with Client(build_server(settings)) as client:
            return payload(await client.call_tool("observe_memory_usage", {"memory_ids": [a]}))

    out = run(go)
    assert out["reinforced"] is False and out["count"] == 0
    assert out["reason"] == "auto_reinforce is disabled in config"
    assert open_store(tmp_path / "stm").get(a).use_count == 0


def test_read_graph_pages_of_ten_and_1x_stats(tmp_path):
    store = open_store(tmp_path / "stm")
    ids = [store.save(f"fact number {k}", now=1_760_000_000 + k).id for k in range(12)]
    store.touch(ids[0])
    store.add_relation(ids[0], ids[1], "related")

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return payload(await client.call_tool("read_graph", {}))

    out = run(go)
    assert len(out["memories"]) == 10
    stats = out["stats"]
    assert (stats["total_memories"], stats["total_relations"]) == (12, 1)
    assert stats["avg_use_count"] == round(1 / 12, 4) and 0 < stats["avg_score"] <= 2
    assert stats["status_filter"] == "active" and stats["memories"] == 12
    page = out["pagination"]
    assert (page["page_size"], page["total_count"], page["total_pages"], page["has_more"]) == (
        10,
        12,
        2,
        True,
    )


def test_find_duplicates_returns_pairs(tmp_path):
    store = open_store(tmp_path / "stm")
    a, b, _ = (store.save(t).id for t in PARAPHRASES)
    store.save("Deploys go out on Thursday afternoons only")

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return payload(
                await client.call_tool(
                    "cluster_memories", {"find_duplicates": True, "duplicate_threshold": 0.5}
                )
            )

    out = run(go)
    assert (
        out["mode"] == "duplicate_detection"
        and out["duplicates_found"] == len(out["duplicates"]) == 3
    )
    pair = out["duplicates"][0]
    assert set(pair) >= {"id1", "id2", "similarity", "content1_preview", "content2_preview"}
    assert {frozenset((p["id1"], p["id2"])) for p in out["duplicates"]} >= {frozenset((a, b))}
    assert all(0.5 <= p["similarity"] <= 1 for p in out["duplicates"])


def test_cluster_tool_and_pipeline_use_one_rule_without_embeddings(tmp_path):
    store = open_store(tmp_path / "stm")
    ids = {store.save(t).id for t in PARAPHRASES}
    store.save("Deploys go out on Thursday afternoons only")

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            tool = payload(await client.call_tool("cluster_memories", {}))
            pipeline = payload(
                await client.call_tool(
                    "run_consolidation", {"dry_run": True, "agents": ["cluster"]}
                )
            )
            return tool, pipeline

    tool, pipeline = run(go)
    assert tool["mode"] == "clustering" and tool["similarity"] == "tfidf"
    assert tool["clusters_found"] == tool["count"] >= 1
    assert set(tool["clusters"][0]["memory_ids"]) <= ids
    assert tool["clusters"][0]["id"] == tool["clusters"][0]["cluster_id"]
    in_report = set(re.findall(r"\bc-[0-9a-f]{10}\b", pipeline["report_markdown"]))
    assert in_report == {c["cluster_id"] for c in tool["clusters"]}
    assert f"link >= {tool['threshold']}" in pipeline["summaries"]["cluster"]


def test_an_explicit_cluster_threshold_is_the_bar_for_tfidf_too(tmp_path, monkeypatch):
    from cortexgraph.settings import Settings

    store = open_store(tmp_path / "stm")
    for t in PARAPHRASES:
        store.save(t)
    monkeypatch.setenv("CORTEXGRAPH_CLUSTER_THRESHOLD", "0.95")  # the 1.x name
    settings = Settings(storage_path=tmp_path / "stm", enable_embeddings=False, beads_enabled=False)
    assert settings.cluster_link_threshold == 0.95
    monkeypatch.delenv("CORTEXGRAPH_CLUSTER_THRESHOLD")
    default = make_settings(tmp_path)

    async def go(s):
        async with Client(build_server(s)) as client:
            return payload(await client.call_tool("cluster_memories", {}))

    strict, tuned = run(go, settings), run(go, default)
    assert (strict["threshold"], strict["clusters_found"]) == (0.95, 0)
    assert tuned["threshold"] == 0.35 and tuned["clusters_found"] == 1  # TF-IDF's tuned bar
