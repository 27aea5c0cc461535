"""memory_retrieve prints short ids (``m:`` and 8 characters); its description tells the model
which tools take them. It said "other tools accept both", and touch_memory, open_memories,
observe_memory_usage and memory_history answered "no memory with id 'm:0dad477d'"."""

from __future__ import annotations

import re

import anyio
from mcp import Client
from mcp_helpers import make_settings, payload

from cortexgraph.mcp_server.app import build_server


def test_the_tools_memory_retrieve_names_take_its_short_ids(tmp_path) -> None:
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
            named = [
                name for name in re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", description) if name in tools
            ]
            short = "m:" + saved["memory_id"][:8]
            answers = {}
            for name in named:
                args = {"memory_id": short}
                if name == "memory_forget":
                    args["action"] = "deprecate"
                answers[name] = await client.call_tool(name, args)
            return saved, description, found, short, named, answers

    saved, description, found, short, named, answers = anyio.run(go)
    assert f"[{short}" in found["context"]  # the form it prints
    assert saved["memory_id"] in [i.get("memory_id") for i in found["items"]], found["items"]
    assert "other tools" not in description  # each tool that takes the form is named
    assert set(named) >= {"set_core_memory", "memory_forget"}, description
    for name, answer in answers.items():
        assert not answer.is_error, (name, answer.content[0].text)
