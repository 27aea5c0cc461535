"""The MCP server on a disk that fills up while Claude saves: each save that could not be
written is an error result saying why, the server keeps answering, and the store afterwards
holds exactly the saves that were acknowledged (tests/storage/test_storage_disk_full.py has the
store-level cases). The server runs under the kernel's file-size limit, which fails writes as a
full disk does: a short write, then an error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_helpers import PYTHON, server_env

from cortexgraph.storage import open_store

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX"),
]

# SIGXFSZ ignored and the limit set survive exec: the server itself runs under them.
LIMITED_SERVER = """
import os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
os.execv(sys.executable, [sys.executable, "-m", "cortexgraph.mcp_server"])
"""


def test_saves_on_a_filling_disk_are_refused_cleanly_and_none_is_half_kept(tmp_path: Path):
    seeded = open_store(tmp_path / "stm")
    seeded.save("Sam prefers PostgreSQL for the billing ledger", now=1_700_000_000)
    limit = (tmp_path / "stm" / "memories.jsonl").stat().st_size + 4_000
    params = StdioServerParameters(
        command=PYTHON,
        args=["-c", LIMITED_SERVER, str(limit)],
        env=server_env(tmp_path),
        cwd=str(tmp_path),
    )

    async def go() -> tuple[list[str], list[str], dict]:
        saved, refused = [], []
        with anyio.fail_after(60):
            async with Client(params) as client:
                for i in range(40):
                    text = f"Decision {i}: the ledger service keeps {i} days of audit logs " * 2
                    result = await client.call_tool("save_memory", {"content": text})
                    if result.is_error:
                        refused.append(result.content[0].text)
                    else:
                        saved.append(json.loads(result.content[0].text)["memory_id"])
                found = await client.call_tool("search_memory", {"query": "audit logs"})
                assert not found.is_error, found.content[0].text
                return saved, refused, json.loads(found.content[0].text)

    saved, refused, found = anyio.run(go)
    assert saved and refused  # the disk filled up part way
    assert all("File too large" in text or "No space" in text for text in refused), refused[0]
    assert {r["id"] for r in found["results"]} <= set(saved)

    store = open_store(tmp_path / "stm")
    assert {m.id for m in store.list()} == {*saved, *(m.id for m in seeded.list())}
    assert store.quarantined_lines == 0
