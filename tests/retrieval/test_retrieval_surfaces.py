"""The MCP tools, the core resource, the prompts and the `cortexgraph context` CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp import Client
from retrieval_helpers import write_note
from typer.testing import CliRunner

from cortexgraph.cli.context_cmd import app as context_app
from cortexgraph.mcp_server.app import build_server
from cortexgraph.retrieval.prompts import compress_session, consolidate_epoch, extract_facts
from cortexgraph.storage import open_store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mcp_server"))
from mcp_helpers import error_text, make_settings, payload


def test_mcp_context_tools_resource_and_prompts(tmp_path):
    store = open_store(tmp_path / "stm")
    old = store.save(
        "We use MySQL for the billing database", entities=["mysql", "billing"], now=1_690_000_000
    )
    rule = store.save("Answer in British English", now=1_690_000_000)
    write_note(tmp_path / "vault", "Style.md", "# Style\n\nShort paragraphs.\n", core="yes")

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            call = client.call_tool
            tools = {t.name for t in (await client.list_tools()).tools}
            saved = payload(
                await call(
                    "save_memory",
                    {
                        "content": "We now use Postgres instead of MySQL for billing",
                        "entities": ["postgres", "mysql", "billing"],
                        "strength": 1.0,
                    },
                )
            )
            update = payload(await call("record_memory_update", {"memory_id": saved["memory_id"]}))
            core = payload(await call("set_core_memory", {"memory_id": rule.id[:8]}))
            ctx = payload(
                await call(
                    "memory_retrieve",
                    {"query": "billing database", "token_budget": 200, "items": True},
                )
            )
            hist = payload(
                await call(
                    "memory_retrieve", {"query": "billing database", "include_history": True}
                )
            )
            graph = payload(await call("graph_query", {"entity": "mysql", "depth": 1}))
            forget = payload(
                await call(
                    "memory_forget", {"memory_id": saved["memory_id"], "action": "deprecate"}
                )
            )
            bad = error_text(await call("memory_forget", {"memory_id": "zz", "action": "delete"}))
            resource = await client.read_resource("cortexgraph://core")
            prompts = {p.name for p in (await client.list_prompts()).prompts}
            prompt = await client.get_prompt("extract_facts", {"text": "I moved to Lisbon."})
            return (
                tools,
                saved,
                update,
                core,
                ctx,
                hist,
                graph,
                forget,
                bad,
                resource,
                prompts,
                prompt,
            )

    tools, saved, update, core, ctx, hist, graph, forget, bad, resource, prompts, prompt = (
        anyio.run(go)
    )
    assert {
        "memory_retrieve",
        "graph_query",
        "set_core_memory",
        "memory_forget",
        "record_memory_update",
    } <= tools
    # save_memory detects the update itself; record_memory_update then has nothing left to do.
    found = saved["temporal"]["superseded"] + update["superseded"]
    assert [s["memory_id"] for s in found] == [old.id]
    assert core == {"success": True, "memory_id": rule.id, "core": True}
    assert ctx["tokens_used"] <= 200 and ctx["tokenizer"] == "minilm-wordpiece"
    assert ctx["context"].startswith("## core\n")
    assert "[n:Style.md] Style: Short paragraphs." in ctx["context"]
    assert (
        saved["memory_id"][:8] in ctx["context"] and "MySQL for the billing" not in ctx["context"]
    )
    assert {i["memory_id"] for i in ctx["items"]} >= {rule.id, saved["memory_id"]}
    assert "## history" in hist["context"] and old.id[:8] in hist["context"]
    assert "superseded_by" in graph["graph"]
    assert forget["action"] == "deprecate"
    assert "Not found" in bad or "Invalid input" in bad
    body = json.loads(resource.contents[0].text)
    assert [m["memory_id"] for m in body["memories"]] == [rule.id]
    assert [n["note_path"] for n in body["notes"]] == ["Style.md"]
    assert {"extract_facts", "compress_session", "consolidate_epoch"} <= prompts
    assert "I moved to Lisbon." in prompt.messages[0].content.text


def test_prompt_templates_name_the_tools_they_need():
    assert "save_memory" in extract_facts("x") and "supersedes" in extract_facts("x")
    assert "at most 3 memories" in compress_session("x", 3)
    text = consolidate_epoch("billing", "March")
    assert "memory_retrieve" in text and "set_core_memory" in text and "March" in text


def test_cli_context_prints_the_block_and_json(tmp_path):
    store = open_store(tmp_path / "stm")
    m = store.save("The release train leaves every second Thursday", tags=["release"])
    (tmp_path / "none").mkdir()  # an empty vault: a named one that is missing is refused
    args = [
        "release train",
        "--storage-path",
        str(tmp_path / "stm"),
        "--vault",
        str(tmp_path / "none"),
    ]
    runner = CliRunner()
    out = runner.invoke(context_app, [*args, "--budget", "100"])
    assert out.exit_code == 0, out.output
    assert f"[m:{m.id[:8]}" in out.stdout and "every second Thursday" in out.stdout
    as_json = runner.invoke(context_app, [*args, "--json"])
    data = json.loads(as_json.stdout)
    assert data["items"][0]["memory_id"] == m.id and data["tokens_used"] > 0
    bad = runner.invoke(context_app, [*args, "--budget", "3"])
    assert bad.exit_code == 2 and "token_budget" in bad.output


def test_cli_context_as_a_subcommand_takes_options_after_the_query(tmp_path):
    """How cli/main.py registers it: `cortexgraph context QUERY --budget N`."""
    import typer

    from cortexgraph.cli.context_cmd import context

    main = typer.Typer()
    main.command("context")(context)
    main.command("other")(lambda: None)
    open_store(tmp_path / "stm").save("Badge access is renewed every January")
    out = CliRunner().invoke(
        main, ["context", "badge access", "--budget", "50", "--storage-path", str(tmp_path / "stm")]
    )
    assert out.exit_code == 0, out.output
    assert "renewed every January" in out.stdout
