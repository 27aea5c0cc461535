"""The shipped demo dataset: ~300 memories an assistant saved while working with one developer.

``data/demo_memories.jsonl`` holds one record a line::

    {"content": str, "tags": [str], "entities": [str], "source": str | null,
     "context": str | null, "strength": float, "age_days": float,
     "last_used_days_ago": float, "use_count": int, "group": str | null}

Times are relative to a ``now`` chosen when seeding, so the dataset keeps the same shape of
decay whenever it is loaded. ``group`` names a set of near-duplicates (a merge benchmark's ground
truth); it is kept on each memory as ``meta.extra["demo_group"]``. Ids are uuid5 of a fixed
namespace and the line number, so seeding twice gives the same ids.
"""

from __future__ import annotations

import json
import uuid
from importlib import resources
from typing import Any

from cortexgraph.storage.decay import DAY
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import Memory, MemoryMeta, validate_strength, validate_tags
from cortexgraph.storage.protocol import MemoryStore

DEMO_NAMESPACE = uuid.UUID("6f1c2d9e-4b7a-5e3f-9a10-c0de6a7e0001")
DEMO_FILE = "demo_memories.jsonl"

_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "content": str,
    "tags": list,
    "entities": list,
    "strength": (int, float),
    "age_days": (int, float),
    "last_used_days_ago": (int, float),
    "use_count": int,
}


def load_demo_records() -> list[dict[str, Any]]:
    """The dataset's records, in file order; raises InvalidInputError on a malformed line."""
    text = resources.files("cortexgraph").joinpath("data", DEMO_FILE).read_text(encoding="utf-8")
    records: list[dict[str, Any]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{DEMO_FILE} line {lineno}: {exc}") from exc
        _check(record, lineno)
        record["line"] = lineno
        records.append(record)
    return records


def demo_id(lineno: int) -> str:
    """The stable id of the memory on line ``lineno`` of the dataset."""
    return str(uuid.uuid5(DEMO_NAMESPACE, f"demo-memory-{lineno}"))


def record_to_memory(record: dict[str, Any], *, now: float) -> Memory:
    extra: dict[str, Any] = {"demo": True}
    if record.get("group"):
        extra["demo_group"] = record["group"]
    return Memory(
        id=demo_id(record["line"]),
        content=record["content"],
        meta=MemoryMeta(
            tags=validate_tags(record["tags"]),
            source=record.get("source"),
            context=record.get("context"),
            extra=extra,
        ),
        entities=validate_tags(record["entities"], "entities"),
        created_at=int(now - float(record["age_days"]) * DAY),
        last_used=int(now - float(record["last_used_days_ago"]) * DAY),
        use_count=int(record["use_count"]),
        strength=validate_strength(record["strength"]),
    )


def demo_memories(*, now: float) -> list[Memory]:
    """The dataset as memories, with times placed relative to ``now`` (unix seconds)."""
    return [record_to_memory(r, now=now) for r in load_demo_records()]


def seed_store(store: MemoryStore, *, now: float) -> list[Memory]:
    """Write the demo memories into ``store`` and return them (as the store kept them)."""
    return store.put_many(demo_memories(now=now))


def _check(record: Any, lineno: int) -> None:
    where = f"{DEMO_FILE} line {lineno}"
    if not isinstance(record, dict):
        raise InvalidInputError(f"{where}: expected a JSON object")
    for key, kind in _REQUIRED.items():
        value = record.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise InvalidInputError(f"{where}: {key!r} is missing or has the wrong type")
    for key in ("source", "context", "group"):
        if record.get(key) is not None and not isinstance(record[key], str):
            raise InvalidInputError(f"{where}: {key!r} must be a string or null")
    if not 1.0 <= float(record["strength"]) <= 2.0:
        raise InvalidInputError(f"{where}: strength must be between 1.0 and 2.0")
    if not 0.0 <= float(record["last_used_days_ago"]) <= float(record["age_days"]):
        raise InvalidInputError(f"{where}: last_used_days_ago must be within 0..age_days")
    if record["use_count"] < 0:
        raise InvalidInputError(f"{where}: use_count must not be negative")


__all__ = [
    "DEMO_NAMESPACE",
    "demo_id",
    "demo_memories",
    "load_demo_records",
    "record_to_memory",
    "seed_store",
]
