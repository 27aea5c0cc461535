"""Memories from records this version wrote, built with exact type tests only.

Opening a store builds every record, so ``Memory.from_json`` tries this path first and falls
back to its strict rules for anything unusual; both accept the same memories
(tests/storage/test_storage_record_fast_path.py).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from cortexgraph.storage.field_rules import ID_RE, MAX_COUNT, MAX_STRENGTH, MAX_TIME
from cortexgraph.storage.memory_fields import (
    MEMORY_FIELDS,
    NEIGHBOUR_FIELD,
    MemoryMeta,
    MemoryStatus,
)

if TYPE_CHECKING:
    from cortexgraph.storage.models import Memory

STATUS_OF = {s.value: s for s in MemoryStatus}
FAST_KEYS = frozenset(MEMORY_FIELDS)
FAST_KEYS_NEIGHBOUR = FAST_KEYS | {NEIGHBOUR_FIELD}  # the same, with a neighbour's text
META_KEYS = frozenset(("tags", "source", "context", "extra"))


_STR_ONLY = frozenset({str})
_INT_ONLY = frozenset({int})
_INT_OR_NONE = frozenset({int, type(None)})
_STR_OR_NONE = frozenset({str, type(None)})


def clean_strings(values: Any) -> bool:
    """A list of distinct, stripped, non-empty strings: what ``validate_tags`` keeps as is."""
    if type(values) is not list:
        return False
    return not values or (
        set(map(type, values)) == _STR_ONLY
        and all(values)
        and list(map(str.strip, values)) == values
        and len(set(values)) == len(values)
    )


def well_formed_memory(cls: type[Memory], d: Any) -> Memory | None:
    """The memory a record written by this version describes, or None: use the full rules.

    Opening a store builds every record, so the common case is checked with exact type tests
    only (C-level maps, no per-field Python calls); anything unusual (1.x forms, floats for
    times, unknown fields) takes the strict path, which accepts or rejects it with a reason.
    Both paths accept the same memories (tests/storage/test_storage_record_fast_path.py)."""
    if type(d) is not dict:
        return None
    if d.keys() == FAST_KEYS:
        neighbour = None
    elif d.keys() == FAST_KEYS_NEIGHBOUR:
        neighbour = d[NEIGHBOUR_FIELD]
        if type(neighbour) is not str:
            return None
    else:
        return None
    meta, mid, content, strength, status = (
        d["meta"],
        d["id"],
        d["content"],
        d["strength"],
        d["status"],
    )
    status = STATUS_OF.get(status) if type(status) is str else None
    if (
        status is None
        or type(mid) is not str
        or type(content) is not str
        or not content
        or content.isspace()
        or type(meta) is not dict
        or type(strength) is not float
        or not 0.0 <= strength <= MAX_STRENGTH
        or meta.keys() != META_KEYS
        or type(meta["extra"]) is not dict
        or not ID_RE.fullmatch(mid)
    ):
        return None
    source, context, promoted_to = meta["source"], meta["context"], d["promoted_to"]
    created, used, uses, reviews, cross = (
        d["created_at"],
        d["last_used"],
        d["use_count"],
        d["review_count"],
        d["cross_domain_count"],
    )
    promoted_at, reviewed_at, priority = d["promoted_at"], d["last_review_at"], d["review_priority"]
    if (
        set(map(type, (created, used, uses, reviews, cross))) != _INT_ONLY
        or not 0 <= uses <= MAX_COUNT
        or not 0 <= reviews <= MAX_COUNT
        or not 0 <= cross <= MAX_COUNT
        or not -MAX_TIME <= created <= MAX_TIME
        or not -MAX_TIME <= used <= MAX_TIME
        or not set(map(type, (promoted_at, reviewed_at))) <= _INT_OR_NONE
        or (promoted_at is not None and not -MAX_TIME <= promoted_at <= MAX_TIME)
        or (reviewed_at is not None and not -MAX_TIME <= reviewed_at <= MAX_TIME)
        or not set(map(type, (source, context, promoted_to))) <= _STR_OR_NONE
        or type(priority) is not float
        or not math.isfinite(priority)
        or not clean_strings(meta["tags"])
        or not clean_strings(d["entities"])
    ):
        return None
    return cls(
        mid,
        content,
        MemoryMeta(tuple(meta["tags"]), source, context, dict(meta["extra"])),
        tuple(d["entities"]),
        created,
        used,
        uses,
        strength,
        status,
        promoted_at,
        promoted_to,
        priority,
        reviewed_at,
        reviews,
        cross,
        neighbour,
    )


def plain_keys(d: dict[str, Any]) -> bool:
    """The keys of a record this version wrote: ``FAST_KEYS``, with or without a neighbour."""
    keys = d.keys()
    return keys in (FAST_KEYS, FAST_KEYS_NEIGHBOUR)


__all__ = [
    "FAST_KEYS",
    "FAST_KEYS_NEIGHBOUR",
    "META_KEYS",
    "STATUS_OF",
    "clean_strings",
    "plain_keys",
    "well_formed_memory",
]
