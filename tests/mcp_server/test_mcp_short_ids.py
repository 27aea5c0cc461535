"""memory_retrieve prints short ids (``m:`` and 8 characters), and every tool that takes a
memory id takes them as printed. Its description said "other tools accept both", and
touch_memory, open_memories, observe_memory_usage and memory_history answered "no memory with
id 'm:0dad477d'"."""

from __future__ import annotations

import anyio
from mcp import Client
from mcp_helpers import make_settings, payload

from cortexgraph.mcp_server.app import build_server


def test_every_tool_that_takes_a_memory_id_takes_memory_retrieves_short_ids(tmp_path) -> None:
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            saved = payload(
                await client.call_tool(
                    "save_memory", {"content": "We chose PostgreSQL 16 for billing"}
                )
            )
            found = payload(
                await client.call_tool(
                    "memory_retrieve", {"query": "PostgreSQL billing", "items": True}
                )
            )
            description = tools["memory_retrieve"].description or ""
            short = "m:" + saved["memory_id"][:8]
            other = payload(await client.call_tool("save_memory", {"content": "Lunch at noon"}))
            calls = {
                "touch_memory": {"memory_id": short},
                "open_memories": {"memory_ids": [short]},
                "observe_memory_usage": {"memory_ids": [short]},
                "memory_history": {"memory_id": short},
                "set_core_memory": {"memory_id": short},
                "create_relation": {
                    "from_memory_id": short,
                    "to_memory_id": other["memory_id"],
                    "relation_type": "related",
                },
                "promote_memory": {"memory_id": short, "dry_run": True, "force": True},
                "memory_forget": {"memory_id": short, "action": "deprecate"},
            }
            answers = {name: await client.call_tool(name, args) for name, args in calls.items()}
            return saved, description, found, short, answers

    saved, description, found, short, answers = anyio.run(go)
    assert f"[{short}" in found["context"]  # the form it prints
    assert saved["memory_id"] in [i.get("memory_id") for i in found["items"]], found["items"]
    assert "every tool that takes a memory id takes the m: form" in " ".join(description.split())
    assert len(answers) == 8
    for name, answer in answers.items():
        assert not answer.is_error, (name, answer.content[0].text)
