"""Process entry points for the lost-update tests (issue 30, Medium 3): each counts uses of one
memory through a real call site, so two of them side by side must add up."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

NOW = 1_760_000_000


def touch(path: str, memory_id: str, times: int, start: Any) -> None:
    from cortexgraph.storage import JSONLStore

    store = JSONLStore(Path(path))
    start.wait()
    for i in range(times):
        store.touch(memory_id, now=NOW + i)


def observe(path: str, memory_id: str, times: int, start: Any) -> None:
    """``observe_memory_usage``, the MCP tool's function, over a real store (the context is
    only the lifespan state the tool reads)."""
    from cortexgraph.mcp_server.tools_save import observe_memory_usage
    from cortexgraph.storage import JSONLStore

    state = SimpleNamespace(
        store=JSONLStore(Path(path)), settings=SimpleNamespace(auto_reinforce=True)
    )
    ctx: Any = SimpleNamespace(request_context=SimpleNamespace(lifespan_context=state))
    start.wait()
    for _ in range(times):
        observe_memory_usage(ctx, [memory_id])


def open_hook(path: str, memory_id: str, times: int, start: Any) -> None:
    """The post-tool-use hook after ``open_memories`` returned the memory."""
    from cortexgraph.hooks.contract import HookInput
    from cortexgraph.hooks.post_tool_use import record_usage
    from cortexgraph.hooks.runtime import HookRuntime, PluginSettings
    from cortexgraph.storage import StoreConfig

    runtime = HookRuntime(
        storage_path=Path(path),
        store_config=StoreConfig(),
        project_dir=None,
        state_dir=Path(path) / "hook-state",
        plugin=PluginSettings(),
    )
    start.wait()
    for i in range(times):
        inp = HookInput(
            event="PostToolUse",
            session_id=f"s{i}",
            tool_name="mcp__cortexgraph__open_memories",
            tool_response={"memories": [{"id": memory_id, "content": "x"}]},
        )
        record_usage(runtime, inp, NOW + i)


def save_and_relate(path: str, anchor_id: str, times: int, start: Any) -> None:
    """New memories, each related to ``anchor_id`` right after it is saved."""
    from cortexgraph.storage import JSONLStore

    store = JSONLStore(Path(path))
    start.wait()
    for i in range(times):
        m = store.save(f"memory {i} written during an export", now=NOW + i)
        store.add_relation(m.id, anchor_id, "related", now=NOW + i)
