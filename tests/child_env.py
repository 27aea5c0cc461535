"""Child processes as tests start them: the environment they get, and a hook run as Claude Code
runs one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# What the developer's machine may have set for cortexgraph, its 1.x (LTM_) or Claude Code:
# none of it reaches a child unless the test sets it.
OURS = ("CORTEXGRAPH_", "LTM_", "CLAUDE_")


def child_env(**values: str) -> dict[str, str]:
    """This process's environment without our variables, then ``values``."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(OURS)}
    env.update(values)
    return env


def run_module(
    module: str, *args: str, env: dict[str, str], stdin: str = "", timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -m MODULE ARGS`` from the repository root, ``stdin`` on its standard input."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
    )


def hook_process(
    event: str, body: dict[str, Any] | str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``python -m cortexgraph.hooks EVENT`` with the event's JSON on stdin, as Claude Code runs it."""
    stdin = body if isinstance(body, str) else json.dumps(body)
    return run_module("cortexgraph.hooks", event, env=env, stdin=stdin, timeout=60)
