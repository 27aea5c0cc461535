"""The real thing: the server as a subprocess, over stdio and streamable HTTP."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_helpers import (
    INITIALIZE,
    PYTHON,
    free_port,
    payload,
    run_flow,
    seed_old_memory,
    server_env,
    wait_for_port,
)

from cortexgraph.storage import open_store

pytestmark = pytest.mark.slow


def stdio_params(tmp_path: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=PYTHON,
        args=["-m", "cortexgraph.mcp_server"],
        env=server_env(tmp_path, **env),
        cwd=str(tmp_path),
    )


def test_mcp_stdio_full_flow(tmp_path):
    old = seed_old_memory(tmp_path)

    async def go():
        with anyio.fail_after(60):
            async with Client(stdio_params(tmp_path)) as client:
                return await run_flow(client, old)

    ids = anyio.run(go)
    assert open_store(tmp_path / "stm").get(ids["a"]).status.value == "promoted"


def test_mcp_stdio_stdout_carries_protocol_only(tmp_path):
    """Raw JSON-RPC over the pipe: every stdout line parses; logs go to stderr."""
    import json

    msgs = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "save_memory", "arguments": {"content": "stdout must stay clean"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "touch_memory", "arguments": {"memory_id": "nope/../x"}},
        },
    ]
    env = server_env(tmp_path, CORTEXGRAPH_LOG_LEVEL="DEBUG")
    proc = subprocess.Popen(
        [PYTHON, "-m", "cortexgraph.mcp_server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    out, err = [], b""
    try:
        for m in msgs:
            proc.stdin.write((json.dumps(m) + "\n").encode())
            proc.stdin.flush()
            if "id" in m:
                out.append(json.loads(proc.stdout.readline()))
    finally:
        proc.stdin.close()
        rest = proc.stdout.read()
        err = proc.stderr.read()
        proc.wait(timeout=20)
    assert rest.strip() == b""
    assert [o["id"] for o in out] == [1, 2, 3]
    assert out[1]["result"]["isError"] is False
    assert out[2]["result"]["isError"] is True
    assert "malformed memory id" in out[2]["result"]["content"][0]["text"]
    assert b"opened store" in err  # DEBUG/INFO logging went to stderr


def test_mcp_stdio_imports_nothing_heavy_at_startup(tmp_path):
    code = (
        "import sys, anyio; from cortexgraph.mcp_server.app import build_server; "
        "from cortexgraph.settings import Settings; from mcp import Client\n"
        f"s = build_server(Settings(storage_path={str(tmp_path / 'stm')!r}))\n"
        "HEAVY = ('torch', 'sentence_transformers', 'spacy', 'prefect', 'keybert', 'flows', "
        "'obsidiantools', 'pandas')\n"
        "async def go():\n"
        "    async with Client(s) as c:\n"
        "        await c.list_tools()\n"
        "        at_start = [m for m in HEAVY if m in sys.modules]\n"
        "        await c.call_tool('search_memory', {'query': 'x'})\n"
        "    return at_start\n"
        "at_start = anyio.run(go)\n"
        # numpy is not on the list: the store (opened in the background at start-up) scores
        # BM25 on numpy arrays. Models and engines must never load before a tool needs them.
        "print([*at_start, *(m for m in HEAVY if m in sys.modules and m not in at_start)])"
    )
    out = subprocess.run(
        [PYTHON, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env(tmp_path),
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def _http_server(tmp_path: Path, port: int, *args: str, **env: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [PYTHON, "-m", "cortexgraph.mcp_server", "--http", "--port", str(port), *args],
        env=server_env(tmp_path, **env),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    wait_for_port(port, proc)
    return proc


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def test_mcp_http_full_flow(tmp_path):
    old = seed_old_memory(tmp_path)
    port = free_port()
    proc = _http_server(tmp_path, port)
    try:

        async def go():
            with anyio.fail_after(60):
                async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                    return await run_flow(client, old)

        anyio.run(go)
    finally:
        _stop(proc)


def test_mcp_http_bearer_token_checked_on_every_request(tmp_path):
    port = free_port()
    proc = _http_server(tmp_path, port, CORTEXGRAPH_HTTP_TOKEN="s3cret-token")
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        r = httpx2.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"accept": "application/json, text/event-stream"},
        )
        assert r.status_code == 401 and "Bearer" in r.headers["www-authenticate"]
        r = httpx2.get(url, headers={"authorization": "Bearer wrong"})
        assert r.status_code == 401

        async def go(token):
            headers = {"authorization": f"Bearer {token}"}
            # The first save loads the enrichment models: allow far more than httpx's 5 s.
            async with (
                httpx2.AsyncClient(headers=headers, timeout=120) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                saved = await client.call_tool("save_memory", {"content": "token works"})
                return payload(saved)

        assert anyio.run(go, "s3cret-token")["success"]
        with pytest.raises(ExceptionGroup) as info:  # the client's task group: it cannot connect
            anyio.run(go, "wrong")
        assert info.group_contains(MCPError, match="error response")
    finally:
        _stop(proc)
    assert [m.content for m in open_store(tmp_path / "stm").list()] == ["token works"]


def test_mcp_http_refuses_public_bind_without_token(tmp_path):
    env = server_env(tmp_path)
    out = subprocess.run(
        [
            PYTHON,
            "-m",
            "cortexgraph.mcp_server",
            "--http",
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode != 0
    assert "CORTEXGRAPH_HTTP_TOKEN" in out.stderr


def test_mcp_console_script_is_installed():
    script = Path(sys.executable).parent / "cortexgraph-mcp"
    assert script.exists() or shutil.which("cortexgraph-mcp"), "pip install -e . first"


def test_mcp_save_while_another_process_writes_loses_nothing(tmp_path):
    """A pipeline-like writer appends to the same store while the server saves."""
    n_server, n_writer = 60, 300
    writer_code = (
        "import sys; from cortexgraph.storage import open_store\n"
        f"s = open_store({str(tmp_path / 'stm')!r})\n"
        f"for i in range({n_writer}):\n"
        "    m = s.save(f'pipeline memory {i}', tags=['pipeline'])\n"
        "    if i % 7 == 0: s.update(m.id, strength=1.5)\n"
    )
    open_store(tmp_path / "stm")

    async def go():
        async with Client(stdio_params(tmp_path)) as client:
            await client.list_tools()
            writer = subprocess.Popen(
                [PYTHON, "-c", writer_code], env=server_env(tmp_path), cwd=tmp_path
            )
            saves = [
                await client.call_tool(
                    "save_memory", {"content": f"server memory {i}", "tags": ["server"]}
                )
                for i in range(n_server)
            ]  # one after another: an async comprehension awaits each in turn
            ids = [payload(saved)["memory_id"] for saved in saves]
            assert writer.wait(timeout=120) == 0
            graph = payload(
                await client.call_tool("read_graph", {"page_size": 100, "limit": 10_000})
            )
            return ids, graph

    ids, graph = anyio.run(go)
    assert graph["pagination"]["total"] == n_server + n_writer
    store = open_store(tmp_path / "stm")
    contents = {m.content for m in store.list()}
    assert {f"server memory {i}" for i in range(n_server)} <= contents
    assert {f"pipeline memory {i}" for i in range(n_writer)} <= contents
    assert all(i in store for i in ids)
    assert store.quarantined_lines == 0
    os.environ.get("CI")
