"""The environment a test hands a cortexgraph child process (a CLI, the MCP server, a hook)."""

from __future__ import annotations

import os

# What the developer's machine may have set for cortexgraph, its 1.x (LTM_) or Claude Code:
# none of it reaches a child unless the test sets it.
OURS = ("CORTEXGRAPH_", "LTM_", "CLAUDE_")


def child_env(**values: str) -> dict[str, str]:
    """This process's environment without our variables, then ``values``."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(OURS)}
    env.update(values)
    return env
