"""Records carrying ``meta.extra`` (entities read, a merge's provenance, mentions ...) build in
bulk to exactly the memories one at a time builds; ``plain_objects`` vouches only for objects
that ``check_object`` passes, and a record it cannot vouch for is built (or refused) alone."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from cortexgraph.storage.bulk_records import plain_memories
from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import Memory, MemoryMeta
from cortexgraph.storage.record_limits import MAX_JSON_DEPTH, check_object, plain_objects
from cortexgraph.storage.validation import loaded_memory

CONFIG = StoreConfig(max_extra_bytes=200)
BASE = Memory(
    id="3f2b8c1e-9d4a-4e7b-8f1a-2c3d4e5f6a7b",
    content="We chose PostgreSQL",
    meta=MemoryMeta(tags=("decision",)),
    entities=("PostgreSQL",),
    created_at=1_700_000_000,
    last_used=1_700_000_100,
).to_json()
# Valid, but orjson cannot write them: not vouched for (a lone surrogate is refused by the
# line's own check, storage.record_limits.check_loaded_line, not by check_object)
BIG_INT = {"n": 10**30}
SURROGATE = {"bad": "\ud800"}
UNVOUCHED = [BIG_INT, SURROGATE]


def _nested(levels: int) -> dict[str, Any]:
    value: Any = "leaf"
    for i in range(levels):
        value = {"k": value} if i % 2 else [value]
    return value if isinstance(value, dict) else {"k": value}


# What stores carry (agents, the MCP server), then odd and refused shapes.
EXTRAS: list[dict[str, Any]] = [
    {},
    {"entities_found": "spacy+rules"},
    {"entities_found": "spacy+rules", "merged_into": "41c35ae2-028e-4999-971a"},
    {
        "entities_found": "rules",
        "merge": {
            "sources": [{"id": "03579ce6", "status": "active"}],
            "cohesion": 1.0,
            "merged_at": 1795773813,
            "repointed": [],
            "issue_id": "cg-ko3",
        },
    },
    {"mentions": ["Kafka", "Go"], "redacted": ["aws-key"], "core": True, "x": None},
    {"undo": {"what": "merge", "at": 1, "why": "wrong"}, "superseded_by": "m2"},
    {"score": -0.5, "list": [1, 2.5, [3, {"a": []}]], "e": {}},
    {"x": float("nan")},
    {"x": [1.0, float("inf")]},
    BIG_INT,
    {"s": "é" * 96},  # 104 characters as JSON, 200 bytes: within
    {"s": "é" * 97},  # 105 characters, 202 bytes: over by bytes only
    {"q": '"' * 96},  # each written as two characters: 200, within
    {"q": '"' * 97},  # 202: over
    {"s": "x" * 200},
    SURROGATE,
    *(_nested(n) for n in (MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1, 40)),
]


def _passes(extra: Any) -> bool:
    try:
        check_object(extra, "extra", CONFIG)
    except InvalidInputError:
        return False
    return True


def test_plain_objects_vouches_exactly_for_what_check_object_passes() -> None:
    verdicts = [_passes(x) for x in EXTRAS]
    assert verdicts.count(False) >= 6 and verdicts.count(True) >= 8
    for extra, passes in zip(EXTRAS, verdicts, strict=True):
        vouched = plain_objects([extra], CONFIG.max_extra_bytes)
        assert vouched == (passes and extra not in UNVOUCHED), extra
    # not JSON's own shapes: passed by check_object, left to it here
    for odd in ({1: "int key"}, {"t": ("a", "b")}, *UNVOUCHED):
        assert _passes(odd) and not plain_objects([odd], CONFIG.max_extra_bytes)
    good = [x for x, ok in zip(EXTRAS, verdicts, strict=True) if ok and x not in UNVOUCHED]
    assert plain_objects(good, CONFIG.max_extra_bytes)
    for refused in (x for x, ok in zip(EXTRAS, verdicts, strict=True) if not ok):
        assert not plain_objects([*good, refused, *good], CONFIG.max_extra_bytes)


def _record(rng: random.Random, i: int) -> dict[str, Any]:
    record = copy.deepcopy(BASE)
    record["id"] = f"{record['id'][:-6]}{i:06d}"
    record["meta"]["extra"] = copy.deepcopy(rng.choice(EXTRAS))
    if rng.random() < 0.2:
        record["neighbour_text"] = "the turn before"
    if rng.random() < 0.1:
        record["meta"]["tags"] = ["a", "b", "c", "d", "e"][: rng.randint(0, 5)]
    # as a store reads it: a JSON line (NaN, a lone surrogate and 10**30 round-trip in json)
    return json.loads(json.dumps(record))


def _one_by_one(record: dict[str, Any]) -> Memory | None:
    try:
        return loaded_memory(copy.deepcopy(record), CONFIG)
    except InvalidInputError:
        return None


@pytest.mark.parametrize("seed", range(3))
def test_records_with_extra_build_in_bulk_to_what_one_at_a_time_builds(seed: int) -> None:
    rng = random.Random(seed)
    taken = with_merge = 0
    for b in range(300):
        block = [_record(rng, 10 * b + i) for i in range(rng.choice([1, 2, 4]))]
        expected = [_one_by_one(r) for r in block]
        given = copy.deepcopy(block)
        built = plain_memories(given, CONFIG)
        if built is None:  # only for a record refused, or one left to the full rules
            assert None in expected or any(r["meta"]["extra"] in UNVOUCHED for r in block)
            continue
        assert None not in expected
        assert built == expected
        assert [m.__reduce__() for m in built] == [m.__reduce__() for m in expected]
        # a dict of its own each, as one at a time copies it
        assert all(
            m.meta.extra is not r["meta"]["extra"] for m, r in zip(built, given, strict=True)
        )
        taken += 1
        with_merge += any("merge" in m.meta.extra for m in built)
    assert taken > 40 and with_merge > 10
