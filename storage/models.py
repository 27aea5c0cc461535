"""Records of the short-term memory store: memories and relations.

Field names follow cortexgraph 1.x exactly, so a store written by 1.x loads as it is and a store
written here is readable by 1.x. Records are frozen: a change is a new record (``replace``), which
is also what the append-only JSONL file stores. ``MemoryMeta`` and ``MemoryStatus`` live in
memory_fields.py and are exported from here as well, where 1.x imports them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.field_rules import (
    MAX_STRENGTH,
    count_field,
    float_field,
    int_field,
    json_list,
    optional_int,
    optional_str,
    or_default,
    short_repr,
    validate_id,
    validate_strength,
    validate_tags,
)
from cortexgraph.storage.memory_fields import (
    MEMORY_FIELDS,
    NEIGHBOUR_FIELD,
    MemoryMeta,
    MemoryStatus,
)
from cortexgraph.storage.record_fast_path import well_formed_memory

MENTIONS_KEY = "mentions"  # meta.extra: Memory.mentions

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


def new_id() -> str:
    return str(uuid.uuid4())


# ``embed`` is 1.x's inline vector: accepted on read, never written (vectors live in a sidecar).
_MEMORY_KEYS = frozenset(MEMORY_FIELDS) | {NEIGHBOUR_FIELD, "embed"}
_MEMORY_ATTRS = (*MEMORY_FIELDS, NEIGHBOUR_FIELD, "unknown")  # the dataclass's field order


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
    # The memory saved just before in the same conversation (storage.recent_saves): ranked
    # with the memory, never shown, merged, exported as its context or written to a note.
    neighbour_text: str | None = None
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

    @property
    def mentions(self) -> tuple[str, ...]:
        """Names a transcript line mentions besides its speaker, found by the consolidation
        run (``meta.extra["mentions"]``): what relations and the graph follow. They are not
        its ``entities``, which search boosts: a reply that names Caroline is not about her."""
        found = self.meta.extra.get(MENTIONS_KEY)
        return tuple(x for x in found if isinstance(x, str)) if isinstance(found, list) else ()

    @property
    def ranking_context(self) -> str | None:
        """The text search ranks beside the content (BM25's context field, and embedded with
        the content): the user's context, then the neighbour's text."""
        context, neighbour = self.meta.context, self.neighbour_text
        if context and neighbour:
            return f"{context}\n{neighbour}"
        return context or neighbour

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
        if self.neighbour_text is not None:
            data[NEIGHBOUR_FIELD] = self.neighbour_text
        return data

    def shown_json(self) -> dict[str, Any]:
        """The record as a user sees it (``cortexgraph show``/``edit``, the web view, the
        hook's recall): ``to_json`` without the neighbour's text, an internal ranking signal.
        Stores, exports and undo records keep using ``to_json``."""
        data = self.to_json()
        data.pop(NEIGHBOUR_FIELD, None)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Memory:
        """Build a memory from a JSONL object; raises InvalidInputError on a bad record.

        Strict about types and ranges, so that a record we would refuse to save is also one we
        refuse to load (the store quarantines it instead of serving nonsense).
        """
        fast = well_formed_memory(cls, data)
        if fast is not None:
            return fast
        if not isinstance(data, Mapping):
            raise InvalidInputError("a memory record must be a JSON object")
        try:
            status = MemoryStatus(or_default(data.get("status"), "active"))
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
                neighbour_text=optional_str(data.get(NEIGHBOUR_FIELD), NEIGHBOUR_FIELD),
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

    def other_end(self, memory_id: str) -> str:
        """The memory this relation links ``memory_id`` to (``memory_id`` itself for a
        relation of a memory to itself)."""
        return self.to_memory_id if self.from_memory_id == memory_id else self.from_memory_id

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
            metadata = or_default(data.get("metadata"), {})
            if isinstance(metadata, str):  # 1.x's SQLite rows keep metadata as a JSON string
                metadata = json.loads(metadata)
            if not isinstance(metadata, Mapping):
                raise InvalidInputError("relation metadata must be an object")
            relation_type = or_default(data.get("relation_type"), "related")
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


__all__ = [
    "MAX_STRENGTH",
    "MENTIONS_KEY",
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
