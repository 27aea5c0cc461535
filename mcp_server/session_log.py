"""What this server session saved and recalled, and ``cortexgraph://stats`` update events.

A server middleware watches tool calls as they leave the server: the ids a save returned are
"saved", the ids a search, open or retrieve returned (or an observe/touch named) are "recalled".
The tools themselves know nothing of it. After a tool that writes, the middleware publishes a
resource-updated event for ``cortexgraph://stats`` on the server's subscription bus, which
``subscriptions/listen`` streams (MCP 2026-07-28) deliver to subscribed clients.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

STATS_URI = "cortexgraph://stats"
# The same resource at LatentContext's address (seed 002: "memory://stats, subscribable").
STATS_URIS = (STATS_URI, "memory://stats")
SAVED_BY = {"save_memory", "memory_store"}
RECALLED_BY = {
    "search_memory",
    "search_unified",
    "open_memories",
    "memory_retrieve",
    "observe_memory_usage",
    "touch_memory",
}
WRITES = {
    "save_memory",
    "memory_store",
    "touch_memory",
    "observe_memory_usage",
    "create_relation",
    "gc",
    "promote_memory",
    "consolidate_memories",
    "run_consolidation",
    "memory_forget",
    "set_core_memory",
    "memory_wipe",
    "memory_compress",
    "record_memory_update",
    "undo_consolidation",
}
# Tools that write the behaviour monitor's ledger, not the store: the stats do not move.
LEDGER_WRITES = {"record_tool_call", "report_outcome"}
MAX_IDS = 1000  # per list: a long session keeps its most recent ones


@dataclass
class SessionLog:
    started_at: float = field(default_factory=time.time)
    saved: list[str] = field(default_factory=list)
    recalled: list[str] = field(default_factory=list)
    calls: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, tool: str, arguments: dict[str, Any], payload: dict[str, Any]) -> None:
        with self._lock:
            self.calls[tool] += 1
            if tool in SAVED_BY and isinstance(payload.get("memory_id"), str):
                _push(self.saved, [payload["memory_id"]])
            elif tool == "memory_forget" and isinstance(payload.get("correction_id"), str):
                _push(self.saved, [payload["correction_id"]])  # the corrected fact
            elif tool in RECALLED_BY:
                _push(self.recalled, _ids_in(payload) or _ids_in(arguments))

    def forget_all(self) -> None:
        with self._lock:
            self.saved.clear()
            self.recalled.clear()

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "started_at": self.started_at,
                "saved": list(self.saved),
                "recalled": list(self.recalled),
                "calls": dict(self.calls),
            }


def _push(target: list[str], ids: list[str]) -> None:
    for i in ids:
        if i in target:
            target.remove(i)
        target.append(i)
    del target[:-MAX_IDS]


def _ids_in(data: Any) -> list[str]:
    """Memory ids in a tool's arguments or result: ``memory_id(s)`` and the ``id`` of each item in
    ``results`` / ``memories`` / ``items``."""
    if not isinstance(data, dict):
        return []
    out: list[str] = []
    for key in ("memory_id", "memory_ids"):
        value = data.get(key)
        out.extend(
            [value]
            if isinstance(value, str)
            else [v for v in value if isinstance(v, str)]
            if isinstance(value, list)
            else []
        )
    for key in ("results", "memories", "items"):
        for item in data.get(key) or ():
            if isinstance(item, dict):
                ident = item.get("id") or item.get("memory_id")
                if isinstance(ident, str):
                    out.append(ident)
    return out


def _payload(result: Any) -> dict[str, Any] | None:
    """The JSON a successful tool result carries, or None."""
    if isinstance(result, dict):
        if result.get("isError"):
            return None
        content = result.get("content") or []
        text = content[0].get("text") if content and isinstance(content[0], dict) else None
    else:
        if getattr(result, "is_error", False):
            return None
        content = getattr(result, "content", None) or []
        text = getattr(content[0], "text", None) if content else None
    try:
        data = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def session_middleware(log: SessionLog, bus: Any) -> Any:
    """Server middleware recording tool calls in ``log`` and publishing stats updates."""
    from mcp.shared.subscriptions import ResourceUpdated

    async def middleware(ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method != "tools/call":
            return result
        params = ctx.params or {}
        tool, arguments = params.get("name"), params.get("arguments") or {}
        payload = _payload(result)
        if isinstance(tool, str) and payload is not None:
            log.record(tool, arguments if isinstance(arguments, dict) else {}, payload)
            if tool in WRITES and bus is not None:
                for uri in STATS_URIS:
                    await bus.publish(ResourceUpdated(uri=uri))
        return result

    return middleware


__all__ = ["STATS_URI", "STATS_URIS", "SessionLog", "session_middleware"]
