"""Memory.from_json's fast path for well-formed records accepts and builds exactly what the
strict rules do: every perturbed record gets the same memory, or is refused by both."""

from __future__ import annotations

import copy
import random

import pytest

import cortexgraph.storage.models as models
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import Memory, MemoryMeta
from cortexgraph.storage.record_fast_path import well_formed_memory

BASE = Memory(
    id="3f2b8c1e-9d4a-4e7b-8f1a-2c3d4e5f6a7b",
    content="We chose PostgreSQL",
    meta=MemoryMeta(tags=("decision", "db"), source="chat", context=None, extra={"k": 1}),
    entities=("PostgreSQL",),
    created_at=1_700_000_000,
    last_used=1_700_000_100,
    use_count=2,
    strength=1.2,
    review_priority=0.5,
).to_json()

ODD_VALUES = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2.5,
    3.0,
    float("nan"),
    float("inf"),
    "",
    " x ",
    "active",
    "archived",
    "bogus",
    "not a uuid!",
    [],
    ["a", "a"],
    ["a", " b"],
    [""],
    ["a", 1],
    {},
    {"tags": ["t"]},
    10**30,
]
META_PATHS = ["tags", "source", "context", "extra"]


def _strict(record: object) -> Memory:
    fast = models.well_formed_memory  # the name Memory.from_json calls
    models.well_formed_memory = lambda cls, d: None
    try:
        return Memory.from_json(record)
    finally:
        models.well_formed_memory = fast


def _outcome(build, record):
    try:
        m = build(copy.deepcopy(record))
    except InvalidInputError:
        return "refused"
    return (m, dict(m.unknown), type(m.strength), type(m.created_at), type(m.review_priority))


def _perturbed(rng: random.Random) -> dict:
    record = copy.deepcopy(BASE)
    for _ in range(rng.randint(1, 2)):
        roll = rng.random()
        if roll < 0.55:
            record[rng.choice(sorted(record))] = rng.choice(ODD_VALUES)
        elif roll < 0.8 and isinstance(record.get("meta"), dict):
            record["meta"][rng.choice(META_PATHS)] = rng.choice(ODD_VALUES)
        elif roll < 0.9:
            record.pop(rng.choice(sorted(record)))
        elif roll < 0.95:
            record["embed"] = [0.1, 0.2]  # 1.x's inline vector, an extra key
        else:  # the text saved just before: written only when there is one
            record["neighbour_text"] = rng.choice(["The turn before.", *ODD_VALUES])
    return record


def test_well_formed_record_takes_the_fast_path() -> None:
    assert well_formed_memory(Memory, copy.deepcopy(BASE)) == _strict(BASE)
    with_neighbour = {**copy.deepcopy(BASE), "neighbour_text": "The turn before."}
    built = well_formed_memory(Memory, with_neighbour)
    assert built is not None and built == _strict(with_neighbour)
    assert built.neighbour_text == "The turn before." and built.meta.context is None
    assert built.to_json() == with_neighbour and "neighbour_text" not in _strict(BASE).to_json()


@pytest.mark.parametrize("seed", range(4))
def test_fast_and_strict_paths_agree_on_perturbed_records(seed: int) -> None:
    rng = random.Random(seed)
    fast_taken = 0
    for _ in range(500):
        record = _perturbed(rng)
        fast_taken += well_formed_memory(Memory, copy.deepcopy(record)) is not None
        assert _outcome(Memory.from_json, record) == _outcome(_strict, record), record
    assert fast_taken > 0  # some perturbations (e.g. another valid status) stay well formed
