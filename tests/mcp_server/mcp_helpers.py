"""Helpers for driving the MCP server through the SDK's client (in-process, stdio, HTTP)."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cortexgraph.settings import Settings
from cortexgraph.storage import open_store

OLD = 1_600_000_000  # a 2020 timestamp: memories last used then are far below the forget line


def server_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CORTEXGRAPH_", "LTM_"))}
    env.update(
        CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "stm"),
        LTM_VAULT_PATH=str(tmp_path / "vault"),
        CORTEXGRAPH_BEADS_REPO=str(tmp_path / "beads"),
        CORTEXGRAPH_ENABLE_EMBEDDINGS="false",
        CORTEXGRAPH_LOG_LEVEL="WARNING",
        OMP_NUM_THREADS="1",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "storage_path": tmp_path / "stm",
        "ltm_vault_path": tmp_path / "vault",
        "beads_repo": tmp_path / "beads",
        "enable_embeddings": False,
        "log_level": "WARNING",
    }
    values.update(overrides)
    return Settings(**values)


def seed_old_memory(tmp_path: Path, content: str = "a forgotten detail about fax machines") -> str:
    """A memory last used in 2020: gc must find it."""
    store = open_store(tmp_path / "stm")
    return store.save(content, tags=["old"], now=OLD).id


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` (the lock file aside), to prove a call changed nothing."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def error_text(result: Any) -> str:
    assert result.is_error, f"expected an error result, got {result.content[0].text[:300]}"
    return result.content[0].text


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
