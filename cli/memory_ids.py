"""The ids a person types: a full id, or any unique prefix of at least 6 characters (the
tables print 8). Ambiguous and unknown prefixes are one-line errors that say so."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cortexgraph.storage.errors import InvalidInputError, MemoryNotFoundError
from cortexgraph.storage.field_rules import short_repr

MIN_PREFIX = 6


def resolve_memory_id(store: Any, text: str, *, also: Iterable[str] = ()) -> str:
    """The stored id ``text`` names: itself when a memory (or one of ``also``, e.g. what gc
    removed) has that id, else the one id starting with it."""
    known = store.find(text) is not None if _id_like(text) else False
    extra = set(also)
    if known or text in extra:
        return text
    if len(text) < MIN_PREFIX:
        raise MemoryNotFoundError(
            f"no memory with id {short_repr(text)} (a prefix needs {MIN_PREFIX}+ characters)"
        )
    matches = sorted(
        {m.id for m in store.list() if m.id.startswith(text)}
        | {i for i in extra if i.startswith(text)}
    )
    if not matches:
        raise MemoryNotFoundError(f"no memory with id {short_repr(text)}")
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (" ..." if len(matches) > 5 else "")
        raise InvalidInputError(
            f"{short_repr(text)} is ambiguous: {len(matches)} memories start with it "
            f"({shown}); type more of the id"
        )
    return matches[0]


def _id_like(text: str) -> bool:
    try:
        from cortexgraph.storage.models import validate_id

        validate_id(text)
    except InvalidInputError:
        return False
    return True


__all__ = ["MIN_PREFIX", "resolve_memory_id"]
