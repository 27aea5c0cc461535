"""search_unified ranks by meaning by default, as search_memory does (issue 31, item 4):
through the SDK's in-process MCP client, a vault note that shares no word with the question."""

from __future__ import annotations

import anyio
from mcp import Client
from mcp_helpers import make_settings, payload

from cortexgraph.mcp_server.app import build_server

QUESTION = "which engine keeps our invoices?"


def test_search_unified_uses_embeddings_by_default_like_search_memory(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Billing ledger.md").write_text(
        "# Billing ledger\n\nWe picked PostgreSQL to store the billing ledger.\n"
    )
    (vault / "Standup.md").write_text("# Standup\n\nThe team standup is at 9:30 on weekdays.\n")

    async def go():
        async with Client(build_server(make_settings(tmp_path, enable_embeddings=True))) as c:
            default = payload(await c.call_tool("search_unified", {"query": QUESTION}))
            keywords = payload(
                await c.call_tool("search_unified", {"query": QUESTION, "use_embeddings": False})
            )
            return default, keywords

    default, keywords = anyio.run(go)
    assert "keyword" not in default["similarity"], default["similarity"]
    assert default["results"] and "PostgreSQL" in default["results"][0]["preview"]
    assert not any("PostgreSQL" in r["preview"] for r in keywords["results"])
