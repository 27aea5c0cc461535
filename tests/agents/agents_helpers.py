"""Builders for the agents' tests (the fakes they share with other folders are in tests/fakes.py)."""

from __future__ import annotations

from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.decay import DAY
from cortexgraph.storage.models import Memory

NOW = 1_760_000_000.0


def add(
    store: InMemoryStore,
    content: str,
    *,
    age_days: float = 0.0,
    used_days_ago: float | None = None,
    use_count: int = 0,
    strength: float = 1.0,
    tags=(),
    entities=(),
    extra=None,
) -> Memory:
    """A memory created ``age_days`` ago and last used ``used_days_ago`` (default: at creation)."""
    m = store.save(
        content,
        tags=tags,
        entities=entities,
        strength=strength,
        extra=extra,
        now=NOW - age_days * DAY,
    )
    last = NOW - (age_days if used_days_ago is None else used_days_ago) * DAY
    return store.update(m.id, use_count=use_count, last_used=int(last))
