"""What may be stored: records checked and encoded exactly as the loader will read them back.

Each record is encoded to its JSON line and parsed back with the loader's own rules, so nothing
is ever written that a later load would refuse (and quarantine). The limits themselves, and the
rules of a stored line: storage.record_limits (re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.field_rules import short_repr
from cortexgraph.storage.jsonl_lines import parse_line
from cortexgraph.storage.models import (
    Memory,
    MemoryMeta,
    MemoryStatus,
    Relation,
    new_id,
    validate_id,
    validate_strength,
    validate_tags,
)
from cortexgraph.storage.record_limits import (
    MAX_JSON_DEPTH,
    bounded_list,
    check_content,
    check_loaded_line,
    check_memory_fields,
    check_object,
    check_relation_fields,
    check_strings,
    check_text,
    encode_record,
    line_bytes,
    lines_pass_rules,
)
from cortexgraph.storage.secrets import redact_memory

# Fields ``update`` may change directly; tags, source, context and extra change the meta.
UPDATABLE_FIELDS = frozenset(
    {
        "content",
        "entities",
        "strength",
        "status",
        "promoted_at",
        "promoted_to",
        "use_count",
        "last_used",
        "review_priority",
        "last_review_at",
        "review_count",
        "cross_domain_count",
        "created_at",
        "meta",
    }
)
META_FIELDS = ("tags", "source", "context", "extra")


def validate_new_memory(
    content: object,
    tags: object = None,
    entities: object = None,
    source: object = None,
    context: object = None,
    extra: object = None,
    config: StoreConfig | None = None,
) -> None:
    """Raise InvalidInputError (short message) unless a memory with these fields may be saved.

    Pure and cheap: sizes are checked before anything else looks at the values, so an edge
    (MCP tool, CLI) can call it before enrichment or any write. ``save`` runs the very same
    checks (``new_memory``): what passes here is never refused there, and the reverse."""
    new_memory(content, tags, entities, source, context, extra, config=config)


def new_memory(
    content: object,
    tags: object = None,
    entities: object = None,
    source: object = None,
    context: object = None,
    extra: object = None,
    *,
    strength: object = 1.0,
    now: int = 0,
    config: StoreConfig | None = None,
    neighbour: object = None,
) -> Memory:
    """The memory ``save`` stores for these fields, checked by every rule; nothing written.
    ``neighbour`` is the text saved just before it (a ranking signal, ``Memory.neighbour_text``)."""
    config = config or StoreConfig()
    tags = bounded_list(tags, config.max_tags)
    entities = bounded_list(entities, config.max_entities)
    check_content(content, config)
    check_strings(tags, "tags", config.max_tags, config.max_tag_chars, "TAG")
    check_strings(entities, "entities", config.max_entities, config.max_entity_chars, "ENTITY")
    check_text(source, "source", config.max_source_chars, "MAX_SOURCE_CHARS")
    check_text(context, "context", config.max_context_chars, "MAX_CONTEXT_CHARS")
    check_object(extra, "extra", config)
    assert isinstance(content, str)  # _check_content
    memory = Memory(
        id=new_id(),
        content=content.strip(),
        meta=MemoryMeta(
            tags=validate_tags(tags),
            source=source,  # type: ignore[arg-type]  # checked above
            context=context,  # type: ignore[arg-type]
            extra=dict(extra or {}),  # type: ignore[call-overload]
        ),
        entities=validate_tags(entities, "entities"),
        created_at=now,
        last_used=now,
        strength=validate_strength(strength),
        neighbour_text=neighbour,  # type: ignore[arg-type]  # checked_memory checks it
    )
    return checked_memory(memory, config)[0]


def loaded_memory(obj: Any, config: StoreConfig) -> Memory:
    memory = Memory.from_json(obj)
    check_memory_fields(memory, config)
    return memory


def loaded_relation(obj: Any, config: StoreConfig) -> Relation:
    relation = Relation.from_json(obj)
    check_relation_fields(relation, config)
    return relation


def reserved_keys(data: Mapping[str, Any]) -> list[str]:
    """The keys of ``data`` that belong to the store's line format (``_deleted``...), quoted
    short; a memory record may not carry them."""
    return [short_repr(k) for k in sorted(k for k in data if str(k).startswith("_"))[:5]]


def checked_memory(memory: Memory, config: StoreConfig) -> tuple[Memory, str]:
    """The memory as it will be stored, and its JSON line."""
    if not isinstance(memory, Memory):
        raise InvalidInputError(f"expected a Memory, got {type(memory).__name__}")
    check_memory_fields(memory, config)
    validate_id(memory.id)
    validate_strength(memory.strength)
    if config.redact_secrets:
        # Nothing a secret detector recognises touches disk (storage.secrets): every write of
        # a record (save, put, import, edit, update) goes through here.
        redacted = redact_memory(memory)
        if redacted is not memory:
            memory = redacted
            check_memory_fields(memory, config)
    reserved = reserved_keys(memory.unknown)
    if reserved:
        # "_deleted" is the store's tombstone marker: a record carrying it would be read back
        # as a deletion. Keys starting with "_" are the store's own, never a memory's.
        raise InvalidInputError(f"reserved key(s) in a memory record: {', '.join(reserved)}")
    line = encode_record(memory.to_json(), "memory")
    # Built back from its line, so what the store holds is what a reload gives.
    return Memory.from_json(parse_line(line_bytes(line, config, "memory"))), line


def checked_relation(relation: Relation, config: StoreConfig | None = None) -> tuple[Relation, str]:
    """The relation as it will be stored, and its JSON line."""
    if not isinstance(relation, Relation):
        raise InvalidInputError(f"expected a Relation, got {type(relation).__name__}")
    config = config or StoreConfig()
    check_relation_fields(relation, config)
    line = encode_record(relation.to_json(), "relation")
    return Relation.from_json(parse_line(line_bytes(line, config, "relation"))), line


def apply_changes(memory: Memory, changes: dict[str, Any]) -> Memory:
    """``memory`` with ``update``'s keyword changes applied (meta fields edit its meta)."""
    changes = dict(changes)
    meta_changes = {k: changes.pop(k) for k in META_FIELDS if k in changes}
    unknown = set(changes) - UPDATABLE_FIELDS
    if unknown:
        raise InvalidInputError(
            f"cannot update field(s) {', '.join(short_repr(k) for k in sorted(unknown)[:5])}"
        )
    if "status" in changes and not isinstance(changes["status"], MemoryStatus):
        try:
            changes["status"] = MemoryStatus(changes["status"])
        except ValueError as exc:
            raise InvalidInputError(f"unknown status {short_repr(changes['status'])}") from exc
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
    "MAX_JSON_DEPTH",
    "UPDATABLE_FIELDS",
    "apply_changes",
    "check_loaded_line",
    "check_memory_fields",
    "check_relation_fields",
    "checked_memory",
    "checked_relation",
    "encode_record",
    "line_bytes",
    "lines_pass_rules",
    "loaded_memory",
    "loaded_relation",
    "new_memory",
    "validate_new_memory",
]
