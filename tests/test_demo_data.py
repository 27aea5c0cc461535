"""The shipped demo dataset parses, is shaped as documented, and seeds a store deterministically."""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources

import pytest

from cortexgraph.demo_data import demo_id, load_demo_records, seed_store
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.decay import DAY, DecayConfig, memory_score, promotion_reason

NOW = 1_750_000_000.0
FIELDS = {
    "content",
    "tags",
    "entities",
    "source",
    "context",
    "strength",
    "age_days",
    "last_used_days_ago",
    "use_count",
    "group",
}


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return load_demo_records()


@pytest.fixture(scope="module")
def seeded():
    store = InMemoryStore()
    return store, seed_store(store, now=NOW)


def test_every_line_is_a_well_formed_record() -> None:
    text = resources.files("cortexgraph").joinpath("data", "demo_memories.jsonl").read_text("utf-8")
    lines = [line for line in text.splitlines() if line.strip()]
    for n, line in enumerate(lines, start=1):
        rec = json.loads(line)
        assert set(rec) == FIELDS, f"line {n}"
        assert rec["content"].strip(), f"line {n}"
        assert all(isinstance(t, str) and t for t in rec["tags"]), f"line {n}"
        assert all(isinstance(e, str) and e for e in rec["entities"]), f"line {n}"
        assert 1.0 <= rec["strength"] <= 2.0, f"line {n}"
        assert 0.0 <= rec["last_used_days_ago"] <= rec["age_days"], f"line {n}"
        assert isinstance(rec["use_count"], int) and rec["use_count"] >= 0, f"line {n}"


def test_size_and_variety(records: list[dict]) -> None:
    assert 280 <= len(records) <= 320
    contents = [r["content"] for r in records]
    assert len(set(contents)) == len(contents), "no verbatim duplicates"
    entities = Counter(e for r in records for e in r["entities"])
    # Shared entities so relationship discovery has links to find.
    for name in ("Sam", "Priya", "Marcus", "Elena", "Tom", "Kofi", "billing-service"):
        assert entities[name] >= 5, name
    assert sum(1 for n in entities.values() if n >= 3) >= 30


def test_near_duplicate_groups(records: list[dict]) -> None:
    groups = Counter(r["group"] for r in records if r["group"])
    sized = {g: n for g, n in groups.items() if n >= 2}
    assert len(sized) >= 20
    assert all(2 <= n <= 4 for n in groups.values()), groups


def test_seeded_store_covers_every_decay_band(seeded) -> None:
    store, memories = seeded
    config = DecayConfig()
    assert len(store.list()) == len(memories)
    scores = [memory_score(m, NOW, config) for m in memories]
    forget = sum(s < config.forget_threshold for s in scores)
    danger = sum(config.danger_zone_min <= s <= config.danger_zone_max for s in scores)
    promote = [m for m in memories if promotion_reason(m, NOW, config)]
    by_use = [
        m
        for m in memories
        if m.use_count >= config.promote_use_count
        and (NOW - m.created_at) / DAY <= config.promote_time_window_days
    ]
    strong_decisions = [m for m in memories if m.strength >= 1.5 and "decision" in m.tags]
    assert forget >= 15
    assert danger >= 30
    assert len(promote) >= 15
    assert len(by_use) >= 5
    assert strong_decisions


def test_seeded_memories_carry_the_record(records: list[dict], seeded) -> None:
    _, memories = seeded
    for rec, mem in zip(records, memories, strict=True):
        assert mem.content == rec["content"]
        assert mem.created_at == int(NOW - rec["age_days"] * DAY)
        assert mem.last_used == int(NOW - rec["last_used_days_ago"] * DAY)
        assert mem.use_count == rec["use_count"]
        assert mem.strength == rec["strength"]
        assert list(mem.meta.tags) == rec["tags"]
        assert list(mem.entities) == rec["entities"]
        assert mem.meta.source == rec["source"]
        assert mem.meta.context == rec["context"]
        assert mem.meta.extra.get("demo_group") == rec["group"]


def test_seeding_is_deterministic() -> None:
    first = seed_store(InMemoryStore(), now=NOW)
    second = seed_store(InMemoryStore(), now=NOW)
    assert [m.id for m in first] == [m.id for m in second]
    assert first == second
    assert len({m.id for m in first}) == len(first)
    assert first[0].id == demo_id(1)
