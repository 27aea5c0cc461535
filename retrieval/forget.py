"""memory_forget: deprecate a fact, correct it (the correction supersedes it), or delete it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from cortexgraph.retrieval.core import resolve_memory_id
from cortexgraph.retrieval.temporal import supersede
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.protocol import MemoryStore

ForgetAction = Literal["deprecate", "correct", "delete"]
ACTIONS: tuple[str, ...] = ("deprecate", "correct", "delete")


@dataclass(frozen=True, slots=True)
class ForgetOutcome:
    action: str
    memory_id: str
    correction_id: str | None = None
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "memory_id": self.memory_id,
            "correction_id": self.correction_id,
            "message": self.message,
        }


def memory_forget(
    store: MemoryStore,
    memory_id: str,
    action: str = "deprecate",
    correction: str | None = None,
    *,
    now: float | None = None,
) -> ForgetOutcome:
    """``deprecate``: kept but no longer true (valid_until = now); ``correct``: ``correction`` is
    saved as a new memory that supersedes this one; ``delete``: gone, with its relations."""
    if action not in ACTIONS:
        raise InvalidInputError(f"unknown action {action!r}; choose one of {', '.join(ACTIONS)}")
    memory_id = resolve_memory_id(store, memory_id)
    ts = int(time.time() if now is None else now)
    if action == "delete":
        if correction:
            raise InvalidInputError("a correction is only used with action='correct'")
        store.delete(memory_id)
        return ForgetOutcome("delete", memory_id, message="deleted with its relations")
    memory = store.get(memory_id)
    if action == "deprecate":
        if correction:
            raise InvalidInputError("a correction is only used with action='correct'")
        extra = dict(memory.meta.extra)
        extra.update(deprecated=True, valid_until=ts)
        store.update(memory_id, extra=extra)
        return ForgetOutcome(
            "deprecate", memory_id, message="kept as history; no longer returned as current"
        )
    if not correction or not correction.strip():
        raise InvalidInputError("action='correct' needs the corrected text in 'correction'")
    new = store.save(
        correction,
        tags=memory.tags,
        entities=memory.entities,
        source="correction",
        context=memory.meta.context,
        extra={"corrects": memory_id},
        strength=memory.strength,
        now=ts,
    )
    supersede(store, memory_id, new.id, reason="correction", now=ts)
    return ForgetOutcome(
        "correct",
        memory_id,
        new.id,
        message=f"correction saved as {new.id}; the old memory is history",
    )


__all__ = ["ACTIONS", "ForgetAction", "ForgetOutcome", "memory_forget"]
