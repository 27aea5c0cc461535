"""Core memory: facts the assistant should always have, whatever the query.

A memory is core when ``meta.extra["core"]`` is true; a vault note when its frontmatter says
``core: true``. ``memory_retrieve`` puts core items first, inside their own share of the budget.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cortexgraph.storage.errors import InvalidInputError, MemoryNotFoundError
from cortexgraph.storage.models import Memory, MemoryStatus, validate_id
from cortexgraph.storage.protocol import MemoryStore
from cortexgraph.storage.save_order import newest_first

CORE_KEY = "core"
_TRUE_WORDS = frozenset({"true", "yes", "on", "1"})
MIN_ID_PREFIX = 8


def is_core_value(value: Any) -> bool:
    """YAML may hand us True, "true", "yes" or 1 for the same intent."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value == 1
    return isinstance(value, str) and value.strip().lower() in _TRUE_WORDS


def is_core_note(note: Any) -> bool:
    return is_core_value(getattr(note, "frontmatter", {}).get(CORE_KEY))


def is_current(memory: Memory) -> bool:
    """Not superseded, deprecated or archived: a fact still believed true."""
    extra = memory.meta.extra
    return (
        memory.status != MemoryStatus.ARCHIVED
        and extra.get("valid_until") is None
        and not extra.get("deprecated")
    )


def core_memories(store: MemoryStore) -> list[Memory]:
    """Current core memories, newest first."""
    return newest_first(store, (m for m in store.list() if m.is_core and is_current(m)))


def core_notes(notes: Iterable[Any]) -> list[Any]:
    return sorted((n for n in notes if is_core_note(n)), key=lambda n: n.path)


def resolve_memory_id(store: MemoryStore, ref: str, *, also: Iterable[str] = ()) -> str:
    """A full id, or a unique prefix of at least 8 characters (as ``memory_retrieve`` prints),
    of a stored memory or of one of ``also``: ids the store no longer holds but a tool still
    acts on (what gc deleted, from its graveyard)."""
    if not isinstance(ref, str) or not ref.strip():
        raise InvalidInputError("memory id must be a non-empty string")
    ref = validate_id(ref.strip().removeprefix("m:"))
    extra = set(also)
    if ref in extra or store.find(ref) is not None:
        return ref
    if len(ref) < MIN_ID_PREFIX:
        raise MemoryNotFoundError(
            f"no memory with id {ref!r} (a prefix needs {MIN_ID_PREFIX}+ characters)"
        )
    matches = sorted(
        {m.id for m in store.list() if m.id.startswith(ref)}
        | {i for i in extra if i.startswith(ref)}
    )
    if not matches:
        raise MemoryNotFoundError(f"no memory with id or id prefix {ref!r}")
    if len(matches) > 1:
        raise InvalidInputError(
            f"id prefix {ref!r} is ambiguous ({len(matches)} memories); give more characters"
        )
    return matches[0]


def set_core(store: MemoryStore, memory_id: str, core: bool = True) -> Memory:
    """Mark (or unmark) a memory as core; returns the updated memory."""
    memory_id = resolve_memory_id(store, memory_id)
    memory = store.get(memory_id)
    extra = dict(memory.meta.extra)
    if core:
        extra[CORE_KEY] = True
    else:
        extra.pop(CORE_KEY, None)
    return store.update(memory_id, extra=extra)


__all__ = [
    "CORE_KEY",
    "core_memories",
    "core_notes",
    "is_core_note",
    "is_core_value",
    "is_current",
    "resolve_memory_id",
    "set_core",
]
