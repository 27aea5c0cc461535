"""What may be stored: records checked and encoded exactly as the loader will read them back.

Each record is encoded to its JSON line and parsed back with the loader's own rules, so nothing
is ever written that a later load would refuse (and quarantine).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from storage.config import StoreConfig
from storage.errors import ContentTooLargeError, InvalidInputError
from storage.models import (
    RELATION_TYPES,
    Memory,
    MemoryStatus,
    Relation,
    validate_id,
    validate_strength,
    validate_tags,
)

# Fields ``update`` may change directly; tags, source, context and extra change the meta.
UPDATABLE_FIELDS = frozenset(
    {"content", "entities", "strength", "status", "promoted_at", "promoted_to", "use_count",
     "last_used", "review_priority", "last_review_at", "review_count", "cross_domain_count",
     "created_at", "meta"}
)  # fmt: skip
META_FIELDS = ("tags", "source", "context", "extra")


def encode_record(record: dict[str, Any], what: str) -> str:
    try:
        return json.dumps(record, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"{what} cannot be stored as JSON ({exc}); use strings, numbers, lists and objects"
        ) from exc


def content_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def checked_memory(memory: Memory, config: StoreConfig) -> tuple[Memory, str]:
    """The memory as it will be stored, and its JSON line."""
    if not isinstance(memory, Memory):
        raise InvalidInputError(f"expected a Memory, got {type(memory).__name__}")
    if not isinstance(memory.content, str) or not memory.content.strip():
        raise InvalidInputError("content must be a non-empty string; nothing to remember")
    size = len(memory.content.encode("utf-8"))
    if size > config.max_content_bytes:
        raise ContentTooLargeError(
            f"content is {size:,} bytes; the limit is {config.max_content_bytes:,} "
            "(CORTEXGRAPH_MAX_CONTENT_BYTES). Split it into smaller memories."
        )
    validate_id(memory.id)
    validate_strength(memory.strength)
    line = encode_record(memory.to_json(), "memory")
    return Memory.from_json(json.loads(line)), line


def checked_relation(relation: Relation) -> tuple[Relation, str]:
    """The relation as it will be stored, and its JSON line."""
    if not isinstance(relation, Relation):
        raise InvalidInputError(f"expected a Relation, got {type(relation).__name__}")
    if not isinstance(relation.relation_type, str) or relation.relation_type not in RELATION_TYPES:
        raise InvalidInputError(
            f"unknown relation_type {relation.relation_type!r}; "
            f"choose one of {', '.join(sorted(RELATION_TYPES))}"
        )
    validate_strength(relation.strength, upper=1.0)
    if relation.from_memory_id == relation.to_memory_id:
        raise InvalidInputError("a relation needs two different memories")
    line = encode_record(relation.to_json(), "relation")
    return Relation.from_json(json.loads(line)), line


def check_extra(extra: object) -> None:
    if extra is not None and not isinstance(extra, Mapping):
        raise InvalidInputError("extra must be an object (a mapping of names to values)")


def apply_changes(memory: Memory, changes: dict[str, Any]) -> Memory:
    """``memory`` with ``update``'s keyword changes applied (meta fields edit its meta)."""
    changes = dict(changes)
    meta_changes = {k: changes.pop(k) for k in META_FIELDS if k in changes}
    unknown = set(changes) - UPDATABLE_FIELDS
    if unknown:
        raise InvalidInputError(f"cannot update field(s) {sorted(unknown)}")
    if "status" in changes and not isinstance(changes["status"], MemoryStatus):
        try:
            changes["status"] = MemoryStatus(changes["status"])
        except ValueError as exc:
            raise InvalidInputError(f"unknown status {changes['status']!r}") from exc
    if "entities" in changes:
        changes["entities"] = validate_tags(changes["entities"], "entities")
    if meta_changes:
        if "tags" in meta_changes:
            meta_changes["tags"] = validate_tags(meta_changes["tags"])
        if "extra" in meta_changes and not isinstance(meta_changes["extra"], Mapping):
            raise InvalidInputError("extra must be an object (a mapping of names to values)")
        changes["meta"] = replace(memory.meta, **meta_changes)
    return replace(memory, **changes)


__all__ = [
    "UPDATABLE_FIELDS",
    "apply_changes",
    "check_extra",
    "checked_memory",
    "checked_relation",
    "content_hash",
    "encode_record",
]
