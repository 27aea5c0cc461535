"""promote_memory: the one promotion step the agent, the MCP tool and the CLI all call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from cortexgraph.storage.decay import promotion_reason
from cortexgraph.storage.linked_memories import linked_memories
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore


class _Sink(Protocol):
    def write_note(
        self,
        memory: Memory,
        *,
        related: Any = (),
        relations: Any = (),
        reason: str = "",
        now: float,
    ) -> Any: ...


@dataclass(frozen=True, slots=True)
class PromotionOutcome:
    memory_id: str
    promoted: bool  # True when a note was written (or would be, on a dry run)
    reason: str  # why it was promoted, or why not
    path: str | None = None  # vault-relative note path
    created: bool = False
    dry_run: bool = False
    conflict_path: str | None = None


def promote_memory(
    store: MemoryStore,
    sink: _Sink | None,
    memory_id: str,
    *,
    reason: str = "",
    now: float,
    force: bool = False,
    dry_run: bool = False,
) -> PromotionOutcome:
    """Write ``memory_id``'s note and mark it promoted in the store.

    Without ``reason`` the decay rules decide (``storage.decay.promotion_reason``); an ineligible
    memory is left alone unless ``force``. Promoting again updates the same note. A dry run
    returns before the sink, which may then be None (no vault opened, none created).
    Raises MemoryNotFoundError for an unknown id.
    """
    memory = store.get(memory_id)
    if not reason:
        config = getattr(store, "config", None)
        decided = promotion_reason(memory, now, config.decay) if config is not None else None
        if decided is None and not force:
            return PromotionOutcome(memory_id, False, "not eligible for promotion (use force)")
        reason = decided or "forced"
    if dry_run:
        return PromotionOutcome(memory_id, True, reason, memory.promoted_to, dry_run=True)
    if sink is None:
        raise ValueError("promote_memory needs a note sink unless it is a dry run")
    relations, related = linked_memories(store, memory_id)
    ref = sink.write_note(memory, related=related, relations=relations, reason=reason, now=now)
    store.update(
        memory_id,
        status=MemoryStatus.PROMOTED,
        promoted_at=memory.promoted_at or int(now),
        promoted_to=ref.path,
    )
    return PromotionOutcome(
        memory_id,
        True,
        reason,
        ref.path,
        created=ref.created,
        conflict_path=getattr(ref, "conflict_path", None),
    )


__all__ = ["PromotionOutcome", "promote_memory"]
