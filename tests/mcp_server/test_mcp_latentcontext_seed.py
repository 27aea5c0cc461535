"""LatentContext's calls (seed 002) through the SDK's in-process MCP client: each of the seed's
shapes is mapped to ours or refused with a message naming what to send; none is ignored."""

from __future__ import annotations

import json

import anyio
from mcp import Client
from mcp_helpers import error_text, make_settings, payload

from cortexgraph.mcp_server.app import build_server

FACTS = (
    "The billing service runs on PostgreSQL 16.",
    "Maria leads the billing team since March.",
)


def run(tmp_path, go):
    async def main():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return await go(client)

    return anyio.run(main)


def test_memory_retrieve_takes_the_seeds_filters_object_and_memory_types(tmp_path):
    async def go(c):
        for text in FACTS:
            payload(await c.call_tool("save_memory", {"content": text}))
        q = "who runs billing and on what database?"
        plain = payload(await c.call_tool("memory_retrieve", {"query": q, "items": True}))
        future = payload(
            await c.call_tool("memory_retrieve", {"query": q, "filters": {"after": "2999-01-01"}})
        )
        facts = payload(
            await c.call_tool(
                "memory_retrieve", {"query": q, "filters": {"memory_types": ["fact"]}}
            )
        )
        bad = await c.call_tool("memory_retrieve", {"query": q, "filters": {"tier": "stm"}})
        return plain, future, facts, bad

    plain, future, facts, bad = run(tmp_path, go)
    assert plain["included"] >= 2
    assert future["included"] == 0  # the filter is applied, not dropped
    assert facts["included"] >= 2
    assert any("'fact' read as tiers stm, ltm, graph" in n for n in facts["notes"])
    assert bad.is_error and "filters takes memory_types, after, before, min_confidence" in (
        error_text(bad)
    )


def test_memory_store_saves_by_type_and_core_is_core(tmp_path):
    async def go(c):
        pref = payload(
            await c.call_tool(
                "memory_store",
                {
                    "content": "The user prefers dark mode.",
                    "memory_type": "preference",
                    "confidence": 0.9,
                },
            )
        )
        core = payload(
            await c.call_tool(
                "memory_store", {"content": "The user's name is Ada.", "memory_type": "core"}
            )
        )
        block = await c.read_resource("memory://core")
        return pref, core, json.loads(block.contents[0].text)

    pref, core, block = run(tmp_path, go)
    assert pref["memory_type"] == "preference" and pref["strength"] == 1.4 and not pref["core"]
    assert core["core"] is True
    assert [m["memory_id"] for m in block["memories"]] == [core["memory_id"]]


def test_working_scope_and_the_memory_addresses(tmp_path):
    async def go(c):
        for text in FACTS:
            payload(await c.call_tool("save_memory", {"content": text}))
        summary = payload(await c.call_tool("memory_compress", {"scope": "working"}))
        addresses = {}
        for uri in ("memory://stats", "memory://session/current", "memory://graph/schema"):
            addresses[uri] = json.loads((await c.read_resource(uri)).contents[0].text)
        return summary, addresses

    summary, addresses = run(tmp_path, go)
    assert summary["scope"] == "session" and summary["sources"] == 2
    assert addresses["memory://stats"]["active"] >= 2
    assert len(addresses["memory://session/current"]["saved"]) >= 2
    assert "relation_types" in addresses["memory://graph/schema"]


def test_the_session_summary_leaves_out_what_memory_forget_deprecated_or_corrected(tmp_path):
    async def go(c):
        kept = payload(await c.call_tool("save_memory", {"content": FACTS[0]}))
        old = payload(await c.call_tool("save_memory", {"content": "The office is in Lyon."}))
        wrong = payload(await c.call_tool("save_memory", {"content": "Deploys are on Mondays."}))
        payload(
            await c.call_tool(
                "memory_forget", {"memory_id": old["memory_id"], "action": "deprecate"}
            )
        )
        fixed = payload(
            await c.call_tool(
                "memory_forget",
                {
                    "memory_id": wrong["memory_id"],
                    "action": "correct",
                    "correction": "Deploys are on Tuesdays.",
                },
            )
        )
        summary = payload(await c.call_tool("memory_compress", {"scope": "session"}))
        return kept, old, wrong, fixed, summary

    kept, old, wrong, fixed, summary = run(tmp_path, go)
    sources = set(summary["source_ids"])
    assert kept["memory_id"] in sources and fixed["correction_id"] in sources
    assert old["memory_id"] not in sources and wrong["memory_id"] not in sources
    assert "Lyon" not in summary["content"] and "Mondays" not in summary["content"]


def test_a_live_run_consolidation_shows_in_memory_status(tmp_path):
    async def go(c):
        before = payload(await c.call_tool("memory_status", {}))
        payload(await c.call_tool("run_consolidation", {"dry_run": True, "agents": ["decay"]}))
        dry = payload(await c.call_tool("memory_status", {}))
        payload(await c.call_tool("run_consolidation", {"dry_run": False, "agents": ["decay"]}))
        return before, dry, payload(await c.call_tool("memory_status", {}))

    before, dry, after = run(tmp_path, go)
    assert before["last_consolidation"] is None and dry["last_consolidation"] is None
    assert after["last_consolidation"]["agents"] == ["decay"]


def test_memory_retrieve_leaves_out_near_duplicates(tmp_path):
    async def go(c):
        ids = [
            payload(await c.call_tool("save_memory", {"content": text}))["memory_id"]
            for text in (
                "The billing service runs on PostgreSQL 16 in production.",
                "The billing service runs on PostgreSQL 16 in production",
                "the billing service runs on postgresql 16 in production!",
                "The billing service ran on PostgreSQL 15 before the upgrade.",
            )
        ]
        out = payload(
            await c.call_tool(
                "memory_retrieve", {"query": "what does billing run on?", "items": True}
            )
        )
        return ids, out

    ids, out = run(tmp_path, go)
    got = {i["memory_id"] for i in out["items"] if i.get("memory_id")}
    assert len(got & set(ids[:3])) == 1 and ids[3] in got  # one restatement, the other fact
    assert any("2 near-duplicate(s)" in n for n in out["notes"]), out.get("notes")


def test_memory_stats_is_subscribable_as_the_seed_says(tmp_path):
    async def go(c):
        async with c.listen(resource_subscriptions=["memory://stats"]) as sub:
            payload(await c.call_tool("save_memory", {"content": "The cache runs Redis 7."}))
            with anyio.fail_after(10):
                async for event in sub:
                    return event, json.loads(
                        (await c.read_resource("memory://stats")).contents[0].text
                    )
        return None, None

    event, stats = run(tmp_path, go)
    assert getattr(event, "uri", None) == "memory://stats"
    assert stats["memories"] == 1


def test_every_tool_that_writes_the_store_announces_the_stats(tmp_path):
    """A tool the server does not mark read-only either announces ``cortexgraph://stats`` after
    it runs (session_log.WRITES) or writes only the monitor's ledger: none is left out, as
    record_memory_update and undo_consolidation were."""
    from cortexgraph.mcp_server.session_log import LEDGER_WRITES, WRITES

    async def go(c):
        return (await c.list_tools()).tools

    tools = run(tmp_path, go)
    writers = {
        t.name
        for t in tools
        if not (t.annotations is not None and t.annotations.read_only_hint is True)
    }
    assert writers, "no tool listed"
    assert writers - WRITES - LEDGER_WRITES == set()
    assert (WRITES | LEDGER_WRITES) - {t.name for t in tools} == set()  # no stale names


def test_record_memory_update_announces_the_stats(tmp_path):
    async def go(c):
        old = payload(await c.call_tool("save_memory", {"content": "Maria lives in Paris."}))
        new = payload(await c.call_tool("save_memory", {"content": "Maria moved to London."}))
        async with c.listen(resource_subscriptions=["cortexgraph://stats"]) as sub:
            update = payload(
                await c.call_tool(
                    "record_memory_update",
                    {"memory_id": new["memory_id"], "supersedes": [old["memory_id"]]},
                )
            )
            with anyio.fail_after(10):
                async for event in sub:
                    return event, update
        return None, None

    event, update = run(tmp_path, go)
    assert update["success"] is True
    assert getattr(event, "uri", None) == "cortexgraph://stats"
