"""Every storage-backed tool through the SDK's in-process client, and bad inputs."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client
from mcp_helpers import (
    OLD,
    error_text,
    folder_bytes,
    make_settings,
    payload,
    run_flow,
    seed_old_memory,
)

from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store


def run(fn, *args):
    return anyio.run(fn, *args)


def test_mcp_full_flow_in_process(tmp_path):
    old = seed_old_memory(tmp_path)

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return await run_flow(client, old)

    ids = run(go)
    store = open_store(tmp_path / "stm")
    assert store.get(ids["a"]).status.value == "promoted"
    assert (tmp_path / "vault" / ids["note"]).is_file()
    assert old not in store


def test_mcp_lists_every_tool_with_described_parameters(tmp_path):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in run(go)}
    expected = {
        "save_memory",
        "search_memory",
        "search_unified",
        "touch_memory",
        "observe_memory_usage",
        "analyze_message",
        "analyze_for_recall",
        "gc",
        "promote_memory",
        "cluster_memories",
        "consolidate_memories",
        "read_graph",
        "open_memories",
        "create_relation",
        "run_consolidation",
        "list_consolidation_issues",
    }
    assert expected <= set(tools)
    for tool in tools.values():
        assert tool.description, tool.name
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"


BAD_CALLS = [
    ("touch_memory", {"memory_id": "3f2b8c1e-9d4a-4e7b-8f1a-2c3d4e5f6a7b"}, "no memory with id"),
    ("touch_memory", {"memory_id": "../../etc/passwd"}, "malformed memory id"),
    ("touch_memory", {"memory_id": "/home/user/.ssh/id_rsa"}, "malformed memory id"),
    ("save_memory", {"content": "   "}, "content is empty"),
    ("save_memory", {"content": "x", "strength": "strong"}, "strength"),
    ("save_memory", {"content": "x", "strength": 7}, "less than or equal to 2"),
    ("save_memory", {"content": "x", "tags": "not-a-list"}, "tags"),
    ("save_memory", {"content": "x", "tags": ["ok", ""]}, "empty strings"),
    ("save_memory", {"content": "x" * 100_001}, "Split it into smaller memories"),
    ("search_memory", {"query": "x", "top_k": "ten"}, "valid integer"),
    ("search_memory", {"query": "x", "top_k": 100_000}, "less than or equal to 100"),
    ("read_graph", {"page_size": 10_000}, "less than or equal to 100"),
    ("read_graph", {"page": 0}, "greater than or equal to 1"),
    ("read_graph", {"status": "deleted"}, "status"),
    ("open_memories", {"memory_ids": ["3f2b8c1e-9d4a-4e7b-8f1a-2c3d4e5f6a7b"]}, "no memory"),
    ("open_memories", {"memory_ids": "a/../../b"}, "malformed memory id"),
    ("open_memories", {"memory_ids": ["x"], "page_size": 1000}, "less than or equal to 100"),
    (
        "create_relation",
        {"from_memory_id": "EXISTING", "to_memory_id": "EXISTING", "relation_type": "related"},
        "two different memories",
    ),
    (
        "create_relation",
        {
            "from_memory_id": "EXISTING",
            "to_memory_id": "3f2b8c1e-9d4a-4e7b-8f1a-2c3d4e5f6a7b",
            "relation_type": "related",
        },
        "no memory with id",
    ),
    (
        "create_relation",
        {"from_memory_id": "EXISTING", "to_memory_id": "EXISTING", "relation_type": "loves"},
        "relation_type",
    ),
    (
        "observe_memory_usage",
        {"memory_ids": ["EXISTING", "3f2b8c1e-9d4a-4e7b-8f1a-2c3d4e5f6a7b"]},
        "nothing was recorded",
    ),
    ("observe_memory_usage", {"memory_ids": []}, "at least 1"),
    ("gc", {"limit": 0}, "greater than or equal to 1"),
    ("promote_memory", {}, "pass memory_id"),
    ("promote_memory", {"memory_id": "EXISTING", "target": "../../tmp"}, "target"),
    ("promote_memory", {"memory_id": "..\\..\\windows"}, "malformed memory id"),
    ("unknown_tool", {}, "unknown_tool"),
]


@pytest.mark.parametrize(
    ("tool", "args", "hint"), BAD_CALLS, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(BAD_CALLS)]
)
def test_mcp_bad_input_is_an_error_result_and_changes_nothing(tmp_path, tool, args, hint):
    existing = open_store(tmp_path / "stm").save("the one memory", tags=["t"], now=OLD).id
    args = json.loads(json.dumps(args).replace("EXISTING", existing))
    before = folder_bytes(tmp_path)

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return await client.call_tool(tool, args)

    text = error_text(run(go))
    assert hint.lower() in text.lower()
    assert folder_bytes(tmp_path) == before


def test_mcp_observe_detects_cross_domain_use_by_tag_overlap(tmp_path):
    store = open_store(tmp_path / "stm")
    same = store.save("JWT tokens expire after 15 minutes", tags=["api", "auth"], strength=1.0)
    far = store.save("Maslow's hierarchy of needs", tags=["psychology"], strength=1.0)

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return payload(
                await client.call_tool(
                    "observe_memory_usage",
                    {"memory_ids": [same.id, far.id], "context_tags": ["api", "auth", "backend"]},
                )
            )

    out = run(go)
    by_id = {r["id"]: r for r in out["results"]}
    assert by_id[same.id]["cross_domain"] is False  # jaccard 2/3
    assert by_id[far.id]["cross_domain"] is True  # jaccard 0
    assert out["cross_domain_count"] == 1
    store2 = open_store(tmp_path / "stm")
    assert store2.get(far.id).strength == pytest.approx(1.05)
    assert store2.get(far.id).cross_domain_count == 1
    assert store2.get(same.id).strength == pytest.approx(1.0)
    assert store2.get(same.id).review_count == 1 and store2.get(same.id).use_count == 1


def test_mcp_pages_are_bounded_and_previews_truncated(tmp_path):
    store = open_store(tmp_path / "stm")
    store.put_many([])
    for i in range(230):
        store.save(f"memory number {i} " + "word " * 400, tags=["bulk"])

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            first = await client.call_tool("read_graph", {"page_size": 100})
            last = await client.call_tool("read_graph", {"page_size": 100, "page": 3})
            search = await client.call_tool(
                "search_memory", {"query": "memory", "top_k": 100, "preview_length": 50}
            )
            return first, last, search

    first, last, search = run(go)
    p1, p3 = payload(first), payload(last)
    assert len(p1["memories"]) == 100 and p1["pagination"]["has_more"]
    assert p1["pagination"]["total"] == 230 and p1["pagination"]["total_pages"] == 3
    assert len(p3["memories"]) == 30 and not p3["pagination"]["has_more"]
    assert all(len(m["content"]) <= 300 and m["truncated"] for m in p1["memories"])
    assert len(first.content[0].text) < 120_000  # ~30k tokens at most
    assert all(len(r["content"]) <= 50 for r in payload(search)["results"])


def test_mcp_resources_and_prompt(tmp_path):
    m = open_store(tmp_path / "stm").save("Resources expose memories too", tags=["r"])

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            stats = await client.read_resource("cortexgraph://stats")
            one = await client.read_resource(f"cortexgraph://memory/{m.id}")
            graph = await client.read_resource("cortexgraph://graph?page=1")
            prompts = await client.list_prompts()
            prompt = await client.get_prompt("memory_system_prompt")
            return stats, one, graph, prompts, prompt

    stats, one, graph, prompts, prompt = run(go)
    assert json.loads(stats.contents[0].text)["active"] == 1
    assert json.loads(one.contents[0].text)["content"] == "Resources expose memories too"
    assert json.loads(graph.contents[0].text)["memories"][0]["id"] == m.id
    assert "memory_system_prompt" in [p.name for p in prompts.prompts]
    text = prompt.messages[0].content.text
    assert "save_memory" in text and "observe_memory_usage" in text


def test_mcp_unreadable_store_path_is_reported_per_call(tmp_path):
    (tmp_path / "stm").write_text("I am a file, not a directory")

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            tools = await client.list_tools()
            return tools, await client.call_tool("search_memory", {"query": "x"})

    tools, result = run(go)
    assert tools.tools  # listing works without a store
    assert "CORTEXGRAPH_STORAGE_PATH" in error_text(result)


def test_mcp_save_with_supersedes_keeps_the_old_fact_as_history(tmp_path):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            old = payload(
                await client.call_tool(
                    "save_memory",
                    {
                        "content": "The team uses MySQL for billing",
                        "entities": ["billing"],
                        "strength": 1.0,
                    },
                )
            )
            new = payload(
                await client.call_tool(
                    "save_memory",
                    {
                        "content": "The team now uses Postgres for billing",
                        "entities": ["billing"],
                        "strength": 1.0,
                        "supersedes": [old["memory_id"]],
                    },
                )
            )
            found = payload(
                await client.call_tool(
                    "search_memory", {"query": "MySQL billing", "use_embeddings": False}
                )
            )
            return old, new, found

    old, new, found = run(go)
    assert new["temporal"]["superseded"][0]["memory_id"] == old["memory_id"]
    ranked = [r["id"] for r in found["results"]]
    assert ranked.index(new["memory_id"]) < ranked.index(old["memory_id"])
