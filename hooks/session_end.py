"""SessionEnd: with ``auto_commit: true``, commit the store's changes to its git repository.

The commit message lists what changed since the last commit (hooks.auto_commit). Without
``auto_commit`` (the default) the hook does nothing. It never prints to stdout: SessionEnd
output is not shown to the model; what happened goes to stderr (shown with ``claude --debug``).
"""

from __future__ import annotations

import sys
from typing import Any

from cortexgraph.hooks.contract import HookInput, run_hook
from cortexgraph.hooks.runtime import load_runtime

EVENT = "SessionEnd"


def handle(inp: HookInput) -> dict[str, Any] | None:
    runtime = load_runtime(inp)
    if not runtime.plugin.auto_commit:
        return None
    from cortexgraph.hooks.auto_commit import commit_store

    for line in commit_store(runtime.storage_path, runtime.store_config, inp.session_id):
        print(f"cortexgraph auto_commit: {line}", file=sys.stderr)
    return None


def main() -> int:
    return run_hook(EVENT, handle)


__all__ = ["handle", "main"]
