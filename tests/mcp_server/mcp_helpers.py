"""Helpers for driving the MCP server through the SDK's client (in-process, stdio, HTTP)."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_common import INITIALIZE, error_text, folder_bytes, make_settings, payload, server_env

from cortexgraph.storage import open_store

OLD = 1_600_000_000  # a 2020 timestamp: memories last used then are far below the forget line


def seed_old_memory(tmp_path: Path, content: str = "a forgotten detail about fax machines") -> str:
    """A memory last used in 2020: gc must find it."""
    store = open_store(tmp_path / "stm")
    return store.save(content, tags=["old"], now=OLD).id


async def run_flow(client: Any, gc_target: str) -> dict[str, Any]:
    """save -> search -> touch -> open -> relate -> read_graph -> promote -> gc, checked."""
    a = payload(
        await client.call_tool(
            "save_memory",
            {
                "content": "We chose PostgreSQL for the billing ledger",
                "tags": ["billing", "decision"],
                "entities": ["PostgreSQL"],
                "strength": 1.2,
            },
        )
    )
    b = payload(
        await client.call_tool(
            "save_memory",
            {"content": "Ledger migrations run nightly with Alembic", "tags": ["billing"]},
        )
    )
    assert a["strength"] == 1.2 and a["entities"] == ["PostgreSQL"]

    # b was saved right after a, so each is the other's context: both match, a matches best.
    found = payload(await client.call_tool("search_memory", {"query": "PostgreSQL billing"}))
    ids = [r["id"] for r in found["results"]]
    assert ids[0] == a["memory_id"] and b["memory_id"] in ids

    touched = payload(
        await client.call_tool(
            "touch_memory", {"memory_id": a["memory_id"], "boost_strength": True}
        )
    )
    assert touched["use_count"] == 1 and touched["strength"] == pytest.approx(1.3)

    opened = payload(await client.call_tool("open_memories", {"memory_ids": [a["memory_id"]]}))
    assert opened["memories"][0]["content"] == "We chose PostgreSQL for the billing ledger"

    rel = payload(
        await client.call_tool(
            "create_relation",
            {
                "from_memory_id": b["memory_id"],
                "to_memory_id": a["memory_id"],
                "relation_type": "supports",
                "strength": 0.8,
            },
        )
    )
    graph = payload(await client.call_tool("read_graph", {"page_size": 10}))
    assert {m["id"] for m in graph["memories"]} >= {a["memory_id"], b["memory_id"]}
    assert [r["id"] for r in graph["relations"]] == [rel["relation_id"]]

    promoted = payload(
        await client.call_tool("promote_memory", {"memory_id": a["memory_id"], "force": True})
    )
    assert promoted["promoted_count"] == 1
    note = promoted["results"][0]["path"]
    assert note and note.endswith(".md")

    preview = payload(await client.call_tool("gc", {}))
    assert preview["dry_run"] and gc_target in preview["memory_ids"]
    done = payload(await client.call_tool("gc", {"dry_run": False}))
    assert done["removed_count"] == preview["total_affected"] >= 1
    after = payload(await client.call_tool("read_graph", {"status": "all"}))
    assert gc_target not in {m["id"] for m in after["memories"]}
    return {"a": a["memory_id"], "b": b["memory_id"], "note": note}


def session_payloads(
    tmp_path: Path, *calls: tuple[str, dict[str, Any]], **settings: Any
) -> list[dict[str, Any]]:
    """Each call's payload, in one session of a server on ``make_settings(tmp_path,
    **settings)`` through the SDK's in-process client (a failed call fails the test)."""
    import anyio
    from mcp import Client

    from cortexgraph.mcp_server.app import build_server

    async def go() -> list[dict[str, Any]]:
        async with Client(build_server(make_settings(tmp_path, **settings))) as client:
            return [payload(await client.call_tool(name, args)) for name, args in calls]

    return anyio.run(go)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on port {port} after {timeout}s")


PYTHON = sys.executable


# The common helpers live in tests/mcp_common.py (the compat tests use them too); re-exported.
__all__ = [
    "INITIALIZE",
    "OLD",
    "error_text",
    "folder_bytes",
    "make_settings",
    "payload",
    "run_flow",
    "seed_old_memory",
    "server_env",
    "session_payloads",
]
