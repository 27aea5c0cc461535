"""The review pages' data: the memory list (filters, paging), one memory's history with the
undo each change offers, the vault notes it links to, and the undo itself. History and undo
are agents.history and agents.undo (the functions `cortexgraph history|undo` call)."""

from __future__ import annotations

from typing import Any

from cortexgraph.storage.decay import DAY, memory_score
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import Memory, MemoryStatus, validate_id

PAGE_MAX = 200
PREVIEW_CHARS = 160
UNDO_ACTIONS = ("merge", "archive", "gc", "promote")
CAUSE = "the web view"


def _has(values: tuple[str, ...], wanted: str) -> bool:
    w = wanted.strip().lower().lstrip("#")
    return any(v.lower() == w or v.lower().startswith(w + "/") for v in values)


def list_memories(
    state: Any,
    *,
    now: float,
    status: str = "",
    tag: str = "",
    entity: str = "",
    min_age_days: float | None = None,
    max_age_days: float | None = None,
    offset: int = 0,
    limit: int = 25,
) -> dict[str, Any]:
    """One page of memories, newest first, and the values each filter can take."""
    if not 1 <= limit <= PAGE_MAX:
        raise InvalidInputError(f"limit must be 1-{PAGE_MAX}")
    if offset < 0:
        raise InvalidInputError("offset must be 0 or more")
    wanted = None
    if status:
        try:
            wanted = MemoryStatus(status)
        except ValueError as exc:
            allowed = ", ".join(s.value for s in MemoryStatus)
            raise InvalidInputError(f"status must be one of {allowed}") from exc
    every = state.store.list()
    cfg = state.store.config.decay

    def age(m: Memory) -> float:
        return (now - m.created_at) / DAY

    picked = [
        m
        for m in every
        if (wanted is None or m.status is wanted)
        and (not tag or _has(m.tags, tag))
        and (not entity or any(e.lower() == entity.strip().lower() for e in m.entities))
        and (min_age_days is None or age(m) >= min_age_days)
        and (max_age_days is None or age(m) <= max_age_days)
    ]
    picked.sort(key=lambda m: (-m.created_at, m.id))
    page = picked[offset : offset + limit]
    return {
        "total": len(picked),
        "offset": offset,
        "limit": limit,
        "items": [
            {
                "id": m.id,
                "preview": m.content[:PREVIEW_CHARS],
                "status": m.status.value,
                "tags": list(m.tags),
                "entities": list(m.entities),
                "created_at": m.created_at,
                "age_days": round(age(m), 1),
                "use_count": m.use_count,
                "score": round(memory_score(m, now, cfg), 4),
            }
            for m in page
        ],
        "choices": {
            "status": [s.value for s in MemoryStatus],
            "tags": sorted({t for m in every for t in m.tags}),
            "entities": sorted({e for m in every for e in m.entities}, key=str.lower),
        },
    }


def undo_offers(memory: Memory | None) -> dict[str, dict[str, str]]:
    """For each kind of history event, the undo that reverses it now (by memory state):
    event name -> {action, target, label}. The undo functions check again when it is asked."""
    from cortexgraph.agents.merge_ops import PROVENANCE_KEY
    from cortexgraph.agents.undo import GC_KEY

    if memory is None:  # deleted by gc: only gc's undo can bring it back
        return {"deleted by gc": {"action": "gc", "target": "", "label": "Restore from gc"}}
    offers: dict[str, dict[str, str]] = {}
    extra = memory.meta.extra
    into = extra.get("merged_into")
    if memory.status is MemoryStatus.PROMOTED:
        offers["promoted"] = {"action": "promote", "target": memory.id, "label": "Unpromote"}
    elif PROVENANCE_KEY in extra:
        offers["merged from"] = {"action": "merge", "target": memory.id, "label": "Undo merge"}
    if memory.status is MemoryStatus.ARCHIVED:
        if isinstance(into, str) and into:
            label = f"Undo the merge into {into[:8]}"
            offers["merged into"] = {"action": "merge", "target": into, "label": label}
        elif GC_KEY in extra:
            offers["archived"] = {"action": "gc", "target": memory.id, "label": "Take back from gc"}
        else:
            offers["archived"] = {"action": "archive", "target": memory.id, "label": "Unarchive"}
    return offers


def _notes(state: Any, memory: Memory | None) -> list[dict[str, str]]:
    """The vault notes the memory links to: its promoted note and its entities' notes."""
    from cortexgraph.vault_sync.entity_notes import entity_name

    index = state.ltm_index()
    if index is None or memory is None:
        return []
    found: dict[str, dict[str, str]] = {}
    note = index.by_memory_id(memory.id) or (
        index.get(memory.promoted_to) if memory.promoted_to else None
    )
    if note is not None:
        found[note.path] = {"path": note.path, "title": note.title, "why": "promoted to"}
    for entity in memory.entities:
        for name in (entity, entity_name(entity)):
            hit = index.resolve_link(name) if name else None
            if hit is not None and hit.path not in found:
                found[hit.path] = {"path": hit.path, "title": hit.title, "why": f"entity {entity}"}
                break
    return list(found.values())


def memory_page(state: Any, memory_id: str) -> dict[str, Any]:
    """History (with the undo each event offers), relations and linked notes of one memory."""
    from cortexgraph.agents.history import history_of
    from cortexgraph.storage.graveyard import Graveyard

    memory_id = validate_id(memory_id)
    memory = state.store.find(memory_id)
    events = history_of(
        state.store,
        memory_id,
        tracker=state.tracker(),
        graveyard=Graveyard(state.settings.storage_path),
    )
    offers = undo_offers(memory)
    history = [e.to_json() for e in events]
    # The offer goes on the latest event of its kind: that is the change it reverses.
    for name, offer in offers.items():
        for row in reversed(history):
            if row["event"] == name:
                row["undo"] = {**offer, "target": offer["target"] or memory_id}
                break
    relations = []
    if memory is not None:
        for rel in state.store.relations():
            if memory_id in (rel.from_memory_id, rel.to_memory_id):
                other = rel.to_memory_id if rel.from_memory_id == memory_id else rel.from_memory_id
                relations.append({"id": other, "type": rel.relation_type})
    return {
        "memory_id": memory_id,
        "exists": memory is not None,
        "history": history,
        "relations": relations,
        "notes": _notes(state, memory),
    }


def undo(state: Any, action: str, memory_id: str, now: float) -> dict[str, Any]:
    """Reverse one change: the same calls as `cortexgraph undo merge|archive|gc|promote`."""
    from cortexgraph.agents import undo as undo_ops

    store, memory_id = state.store, validate_id(memory_id)
    if action == "merge":
        result = undo_ops.undo_merge_of(store, memory_id, now=now, cause=CAUSE).to_json()
    elif action == "archive":
        result = undo_ops.unarchive(store, memory_id, now=now, cause=CAUSE).to_json()
    elif action == "gc":
        from cortexgraph.storage.graveyard import Graveyard

        graveyard = Graveyard(state.settings.storage_path)
        result = undo_ops.restore_collected(
            store, graveyard, memory_id, now=now, cause=CAUSE
        ).to_json()
    elif action == "promote":
        from cortexgraph.vault_sync.unpromote import unpromote_memory

        s = state.settings
        done = unpromote_memory(
            store, s.vault_path, memory_id, folder=s.ltm_promoted_folder, now=now, cause=CAUSE
        )
        result = done.as_undo()
    else:
        raise InvalidInputError(f"undo one of {', '.join(UNDO_ACTIONS)}")
    return {"success": True, **result}


__all__ = ["list_memories", "memory_page", "undo", "undo_offers"]
