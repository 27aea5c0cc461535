"""The MCP Inspector's CLI mode lists our tools (needs Node.js; npm's registry once per machine).

The Inspector is installed once into a cache folder (``inspector_cli``; .ci/run installs it
before the tests) and run from there: ``npx -y`` fetched and unpacked it on every run, 130 s
of a 6.5-minute suite.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from filelock import FileLock
from mcp_helpers import PYTHON, server_env

VERSION = "0.15.0"  # newer versions need Node 22; .ci/run installs the same one
INSPECTOR = f"@modelcontextprotocol/inspector@{VERSION}"

pytestmark = [pytest.mark.node, pytest.mark.slow]


def inspector_home() -> Path:
    """Where this version lives: CORTEXGRAPH_TEST_TOOLS, else ~/.cache/cortexgraph-tests."""
    base = os.environ.get("CORTEXGRAPH_TEST_TOOLS") or Path.home() / ".cache" / "cortexgraph-tests"
    return Path(base) / f"inspector-{VERSION}"


@pytest.fixture(scope="session")
def inspector_cli() -> Path:
    """The installed Inspector's CLI, npm-installed here first if it is not there yet."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node/npm is not installed")
    home = inspector_home()
    cli = home / "node_modules" / ".bin" / "mcp-inspector"
    home.mkdir(parents=True, exist_ok=True)
    with FileLock(str(home) + ".lock", timeout=600):  # one install for all xdist workers
        if not cli.exists():
            done = subprocess.run(
                ["npm", "install", "--prefix", str(home), "--no-audit", "--no-fund", INSPECTOR],
                capture_output=True,
                text=True,
                timeout=400,
            )
            if done.returncode != 0:
                pytest.skip(f"cannot install {INSPECTOR}: {done.stderr.strip()[-300:]}")
    return cli


def test_mcp_inspector_cli_lists_tools(tmp_path, inspector_cli):
    env = server_env(tmp_path)
    cmd = [str(inspector_cli), "--cli", PYTHON, "-m", "cortexgraph.mcp_server"]
    out = subprocess.run(
        [*cmd, "--method", "tools/list"],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    names = {t["name"] for t in json.loads(out.stdout)["tools"]}
    assert {"save_memory", "search_memory", "run_consolidation"} <= names
