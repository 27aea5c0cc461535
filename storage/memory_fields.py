"""A memory record's parts below ``Memory`` itself: its status, its meta and its field names.

They sit apart from storage.models so that the record fast path (record_fast_path.py) can build
them while ``Memory.from_json`` calls that fast path, with no import cycle.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.field_rules import optional_str, or_default, validate_tags

# The keys of a memory record this version writes, in Memory's field order.
MEMORY_FIELDS = (
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
# Written only when set (so a record without it is byte for byte what 1.x writes): the text of
# the memory saved just before in the same conversation, a ranking signal that is never the
# user's ``meta.context`` (storage.recent_saves). Memory's last field before ``unknown``.
NEIGHBOUR_FIELD = "neighbour_text"


class MemoryStatus(StrEnum):
    ACTIVE = "active"
    PROMOTED = "promoted"
    ARCHIVED = "archived"


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
        extra = or_default(data.get("extra"), {})
        if not isinstance(extra, Mapping):
            raise InvalidInputError(f"meta.extra must be an object, got {type(extra).__name__}")
        return cls(
            tags=validate_tags(or_default(data.get("tags"), ())),
            source=optional_str(data.get("source"), "meta.source"),
            context=optional_str(data.get("context"), "meta.context"),
            extra=dict(extra),
        )


__all__ = ["MEMORY_FIELDS", "NEIGHBOUR_FIELD", "MemoryMeta", "MemoryStatus"]
