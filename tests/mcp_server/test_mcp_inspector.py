"""The MCP Inspector's CLI mode lists our tools (needs Node.js and the npm registry)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from mcp_helpers import PYTHON, server_env

INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"  # newer versions need Node 22

pytestmark = [pytest.mark.node, pytest.mark.slow]


def test_mcp_inspector_cli_lists_tools(tmp_path):
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("node/npx is not installed")
    env = server_env(tmp_path)
    cmd = [
        npx,
        "-y",
        INSPECTOR,
        "--cli",
        PYTHON,
        "-m",
        "cortexgraph.mcp_server",
        "--method",
        "tools/list",
    ]
    try:
        out = subprocess.run(
            cmd, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"{INSPECTOR} could not be fetched or started within 240 s")
    if out.returncode != 0 and (
        "npm ERR" in out.stderr or "ENOTFOUND" in out.stderr or "EAI_AGAIN" in out.stderr
    ):
        pytest.skip(f"cannot fetch {INSPECTOR}: {out.stderr.strip()[-300:]}")
    assert out.returncode == 0, out.stderr[-2000:]
    names = {t["name"] for t in json.loads(out.stdout)["tools"]}
    assert {"save_memory", "search_memory", "run_consolidation"} <= names
