"""Records of the short-term memory store: memories and relations.

Field names follow cortexgraph 1.x exactly, so a store written by 1.x loads as it is and a store
written here is readable by 1.x. Records are frozen: a change is a new record (``replace``), which
is also what the append-only JSONL file stores.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.field_rules import (
    ID_RE,
    MAX_COUNT,
    MAX_STRENGTH,
    MAX_TIME,
    count_field,
    float_field,
    int_field,
    json_list,
    optional_int,
    optional_str,
    short_repr,
    validate_id,
    validate_strength,
    validate_tags,
)

RELATION_TYPES = frozenset(
    {
        "related",
        "causes",
        "supports",
        "contradicts",
        "has_decision",
        "consolidated_from",
        # temporal truth: the newer memory replaces the older one (retrieval/temporal.py)
        "superseded_by",
    }
)


class MemoryStatus(StrEnum):
    ACTIVE = "active"
    PROMOTED = "promoted"
    ARCHIVED = "archived"


def new_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True, slots=True)
class MemoryMeta:
    tags: tuple[str, ...] = ()
    source: str | None = None
    context: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as a constructor call: far quicker to load than per-field state (snapshot).
        return (MemoryMeta, (self.tags, self.source, self.context, self.extra))

    def to_json(self) -> dict[str, Any]:
        return {
            "tags": list(self.tags),
            "source": self.source,
            "context": self.context,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_json(cls, data: Any) -> MemoryMeta:
        if data is None:
            return cls()
        if isinstance(data, str):  # 1.x's SQLite rows keep meta as a JSON string
            data = json.loads(data)
        if not isinstance(data, Mapping):
            raise InvalidInputError("meta must be an object")
        extra = _or_default(data.get("extra"), {})
        if not isinstance(extra, Mapping):
            raise InvalidInputError(f"meta.extra must be an object, got {type(extra).__name__}")
        return cls(
            tags=validate_tags(_or_default(data.get("tags"), ())),
            source=optional_str(data.get("source"), "meta.source"),
            context=optional_str(data.get("context"), "meta.context"),
            extra=dict(extra),
        )


_MEMORY_FIELDS = (
    "id",
    "content",
    "meta",
    "entities",
    "created_at",
    "last_used",
    "use_count",
    "strength",
    "status",
    "promoted_at",
    "promoted_to",
    "review_priority",
    "last_review_at",
    "review_count",
    "cross_domain_count",
)
# ``embed`` is 1.x's inline vector: accepted on read, never written (vectors live in a sidecar).
_MEMORY_KEYS = frozenset(_MEMORY_FIELDS) | {"embed"}
_MEMORY_ATTRS = (*_MEMORY_FIELDS, "unknown")  # the dataclass's field order


@dataclass(frozen=True, slots=True)
class Memory:
    """One short-term memory. Times are unix seconds, as in 1.x."""

    id: str
    content: str
    meta: MemoryMeta = field(default_factory=MemoryMeta)
    entities: tuple[str, ...] = ()
    created_at: int = 0
    last_used: int = 0
    use_count: int = 0
    strength: float = 1.0
    status: MemoryStatus = MemoryStatus.ACTIVE
    promoted_at: int | None = None
    promoted_to: str | None = None
    review_priority: float = 0.0
    last_review_at: int | None = None
    review_count: int = 0
    cross_domain_count: int = 0
    # Fields written by other versions that we do not know; kept so a rewrite loses nothing.
    unknown: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def tags(self) -> tuple[str, ...]:
        return self.meta.tags

    def __reduce__(self) -> tuple[Any, ...]:
        return (Memory, tuple(map(self.__getattribute__, _MEMORY_ATTRS)))

    @property
    def is_core(self) -> bool:
        return bool(self.meta.extra.get("core"))

    def with_changes(self, **changes: Any) -> Memory:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = dict(self.unknown)
        data.update(
            id=self.id,
            content=self.content,
            meta=self.meta.to_json(),
            entities=list(self.entities),
            created_at=self.created_at,
            last_used=self.last_used,
            use_count=self.use_count,
            strength=self.strength,
            status=self.status.value,
            promoted_at=self.promoted_at,
            promoted_to=self.promoted_to,
            review_priority=self.review_priority,
            last_review_at=self.last_review_at,
            review_count=self.review_count,
            cross_domain_count=self.cross_domain_count,
        )
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Memory:
        """Build a memory from a JSONL object; raises InvalidInputError on a bad record.

        Strict about types and ranges, so that a record we would refuse to save is also one we
        refuse to load (the store quarantines it instead of serving nonsense).
        """
        fast = _well_formed_memory(cls, data)
        if fast is not None:
            return fast
        if not isinstance(data, Mapping):
            raise InvalidInputError("a memory record must be a JSON object")
        try:
            status = MemoryStatus(_or_default(data.get("status"), "active"))
        except (ValueError, TypeError) as exc:
            raise InvalidInputError(
                f"unknown memory status {short_repr(data.get('status'))}"
            ) from exc
        content = data.get("content")
        if not isinstance(content, str):
            raise InvalidInputError("memory content must be a string")
        if not content or content.isspace():
            raise InvalidInputError("memory content must not be empty")
        unknown = {k: v for k, v in data.items() if k not in _MEMORY_KEYS}
        try:
            created_at = int_field(data.get("created_at"), "created_at", 0)
            strength = data.get("strength", 1.0)
            return cls(
                id=validate_id(data.get("id")),
                content=content,
                meta=MemoryMeta.from_json(data.get("meta")),
                entities=validate_tags(json_list(data.get("entities")), "entities"),
                created_at=created_at,
                last_used=int_field(data.get("last_used"), "last_used", created_at),
                use_count=count_field(data.get("use_count"), "use_count"),
                strength=validate_strength(1.0 if strength is None else strength),
                status=status,
                promoted_at=optional_int(data.get("promoted_at"), "promoted_at"),
                promoted_to=optional_str(data.get("promoted_to"), "promoted_to"),
                review_priority=float_field(data.get("review_priority"), "review_priority"),
                last_review_at=optional_int(data.get("last_review_at"), "last_review_at"),
                review_count=count_field(data.get("review_count"), "review_count"),
                cross_domain_count=count_field(
                    data.get("cross_domain_count"), "cross_domain_count"
                ),
                unknown=unknown,
            )
        except (TypeError, ValueError, OverflowError) as exc:
            if isinstance(exc, InvalidInputError):
                raise
            raise InvalidInputError(f"bad memory record: {short_repr(str(exc), 200)}") from exc


@dataclass(frozen=True, slots=True)
class Relation:
    id: str
    from_memory_id: str
    to_memory_id: str
    relation_type: str = "related"
    strength: float = 1.0
    created_at: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "from_memory_id": self.from_memory_id,
            "to_memory_id": self.to_memory_id,
            "relation_type": self.relation_type,
            "strength": self.strength,
            "created_at": self.created_at,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Relation:
        if not isinstance(data, Mapping):
            raise InvalidInputError("a relation record must be a JSON object")
        try:
            metadata = _or_default(data.get("metadata"), {})
            if isinstance(metadata, str):  # 1.x's SQLite rows keep metadata as a JSON string
                metadata = json.loads(metadata)
            if not isinstance(metadata, Mapping):
                raise InvalidInputError("relation metadata must be an object")
            relation_type = _or_default(data.get("relation_type"), "related")
            if not isinstance(relation_type, str):
                raise InvalidInputError(
                    f"relation_type must be a string, got {short_repr(relation_type)}"
                )
            strength = data.get("strength", 1.0)
            return cls(
                id=validate_id(data.get("id"), "relation id"),
                from_memory_id=validate_id(data.get("from_memory_id")),
                to_memory_id=validate_id(data.get("to_memory_id")),
                relation_type=relation_type,
                strength=validate_strength(1.0 if strength is None else strength, upper=1.0),
                created_at=int_field(data.get("created_at"), "created_at", 0),
                metadata=dict(metadata),
            )
        except (TypeError, ValueError, OverflowError) as exc:
            if isinstance(exc, InvalidInputError):
                raise
            raise InvalidInputError(f"bad relation record: {short_repr(str(exc), 200)}") from exc


@dataclass(frozen=True, slots=True)
class SearchResult:
    """A ranked memory. ``score`` orders results; ``similarity`` is the text relevance (0-1)."""

    memory: Memory
    score: float
    similarity: float
    decay_score: float
    age_days: float
    from_review: bool = False

    @property
    def use_count(self) -> int:
        return self.memory.use_count


def _or_default(value: Any, default: Any) -> Any:
    """Missing or null means the default; any other falsy value ([], 0, "") is kept, and
    rejected by the field's rule like any wrong value (``or`` would have accepted it)."""
    return default if value is None else value


_STATUS_OF = {s.value: s for s in MemoryStatus}
_FAST_KEYS = frozenset(_MEMORY_FIELDS)
_META_KEYS = frozenset(("tags", "source", "context", "extra"))


_STR_ONLY = frozenset({str})
_INT_ONLY = frozenset({int})
_INT_OR_NONE = frozenset({int, type(None)})
_STR_OR_NONE = frozenset({str, type(None)})


def _clean_strings(values: Any) -> bool:
    """A list of distinct, stripped, non-empty strings: what ``validate_tags`` keeps as is."""
    if type(values) is not list:
        return False
    return not values or (
        set(map(type, values)) == _STR_ONLY
        and all(values)
        and list(map(str.strip, values)) == values
        and len(set(values)) == len(values)
    )


def _well_formed_memory(cls: type[Memory], d: Any) -> Memory | None:
    """The memory a record written by this version describes, or None: use the full rules.

    Opening a store builds every record, so the common case is checked with exact type tests
    only (C-level maps, no per-field Python calls); anything unusual (1.x forms, floats for
    times, unknown fields) takes the strict path, which accepts or rejects it with a reason.
    Both paths accept the same memories (tests/storage/test_storage_record_fast_path.py)."""
    if type(d) is not dict or d.keys() != _FAST_KEYS:
        return None
    meta, mid, content, strength, status = (
        d["meta"],
        d["id"],
        d["content"],
        d["strength"],
        d["status"],
    )
    status = _STATUS_OF.get(status) if type(status) is str else None
    if (
        status is None
        or type(mid) is not str
        or type(content) is not str
        or not content
        or content.isspace()
        or type(meta) is not dict
        or type(strength) is not float
        or not 0.0 <= strength <= MAX_STRENGTH
        or meta.keys() != _META_KEYS
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
        or not _clean_strings(meta["tags"])
        or not _clean_strings(d["entities"])
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
    )


__all__ = [
    "MAX_STRENGTH",
    "RELATION_TYPES",
    "Memory",
    "MemoryMeta",
    "MemoryStatus",
    "Relation",
    "SearchResult",
    "new_id",
    "validate_id",
    "validate_strength",
    "validate_tags",
]
