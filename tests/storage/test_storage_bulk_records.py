"""Opening a store in bulk (records parsed and built a block at a time, plain words tokenised
by a shortcut) gives exactly what the line-by-line way and the general rules give."""

from __future__ import annotations

import copy
import functools
import json
import random
from dataclasses import FrozenInstanceError, dataclass

import pytest

import cortexgraph.storage.jsonl_lines as jsonl_lines
from cortexgraph.storage.bulk_records import dataclass_instances, plain_memories
from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.jsonl_lines import live_records
from cortexgraph.storage.models import Memory, MemoryMeta
from cortexgraph.storage.record_fast_path import well_formed_memory
from cortexgraph.storage.record_limits import _plainly_within
from cortexgraph.storage.terms import (
    _COMPOUND_SEP_RE,
    _TOKEN_RE,
    STOP_WORDS,
    TermCache,
    _stem_words,
    tokenize,
)
from cortexgraph.storage.text_index import TextIndex
from cortexgraph.storage.validation import check_loaded_line, lines_pass_rules, loaded_memory

CONFIG = StoreConfig(max_tags=3, max_tag_chars=8, max_source_chars=12, max_context_chars=30)
BASE = Memory(
    id="3f2b8c1e-9d4a-4e7b-8f1a-2c3d4e5f6a7b",
    content="We chose PostgreSQL",
    meta=MemoryMeta(tags=("decision", "db"), source="chat", context="a talk"),
    entities=("PostgreSQL",),
    created_at=1_700_000_000,
    last_used=1_700_000_100,
    use_count=2,
    strength=1.2,
    review_priority=0.5,
).to_json()
ODD = [None, True, 0, -1, 2.5, 3.0, float("nan"), "", " x ", "archived", "bogus", "x" * 40]
ODD += [[], ["a", "a"], ["a", " b"], [""], ["a", 1], ["a", "b", "c", "d"], ["y" * 9], {}]
ODD += [{"k": 1}, 10**30, -(10**12)]


def _perturbed(rng: random.Random) -> dict:
    record = copy.deepcopy(BASE)
    record["id"] = record["id"][:-4] + f"{rng.randrange(10_000):04d}"
    for _ in range(rng.randint(0, 2)):
        roll = rng.random()
        if roll < 0.5:
            record[rng.choice(sorted(record))] = rng.choice(ODD)
        elif roll < 0.85 and isinstance(record.get("meta"), dict):
            record["meta"][rng.choice(["tags", "source", "context", "extra"])] = rng.choice(ODD)
        elif roll < 0.93:
            record.pop(rng.choice(sorted(record)))
        else:  # the text saved just before (over the context limit too: "x" * 40)
            record["neighbour_text"] = rng.choice(["the turn before", "the turn before", *ODD])
    return record


def _one_by_one(record: dict) -> Memory | None:
    """What a load builds for it on the fast path within every limit, else None."""
    memory = well_formed_memory(Memory, copy.deepcopy(record))
    if memory is None or not _plainly_within(memory, memory.meta, CONFIG):
        return None
    assert memory == loaded_memory(copy.deepcopy(record), CONFIG)
    return memory


@pytest.mark.parametrize("seed", range(3))
def test_a_block_is_built_in_bulk_only_when_every_record_is_plain(seed: int) -> None:
    rng = random.Random(seed)
    taken = 0
    for _ in range(300):
        block = [_perturbed(rng) for _ in range(rng.choice([1, 1, 3]))]
        expected = [_one_by_one(r) for r in block]
        built = plain_memories(copy.deepcopy(block), CONFIG)
        if None in expected:
            assert built is None, block
        else:
            taken += 1
            assert built == expected
            assert [type(m.strength) for m in built] == [float] * len(block)
            assert [m.unknown for m in built] == [{}] * len(block)
            # built slot by slot (bulk_records.dataclass_instances): every field, unknown included
            assert [m.__reduce__() for m in built] == [m.__reduce__() for m in expected]
            assert len({id(m.unknown) for m in built} | {id(m.meta.extra) for m in built}) == (
                2 * len(block)
            )
    assert taken > 20


@dataclass(frozen=True, slots=True)
class _Base:
    a: int


@dataclass(frozen=True, slots=True)
class _Derived(_Base):
    b: str = ""


def test_dataclass_instances_of_a_class_with_a_base_are_built_through_its_slots() -> None:
    # a base's slots too: no plain class shares that layout, each slot's own setter fills it
    built = dataclass_instances(_Derived, 2, a=[1, 2], b=["x", "y"])
    assert built == [_Derived(1, "x"), _Derived(2, "y")]
    assert [type(d) for d in built] == [_Derived, _Derived]
    with pytest.raises(FrozenInstanceError):
        built[0].a = 3  # type: ignore[misc]
    memories = dataclass_instances(
        MemoryMeta, 1, tags=[("t",)], source=[None], context=["c"], extra=[{}]
    )
    assert type(memories[0]) is MemoryMeta and memories[0] == MemoryMeta(("t",), None, "c", {})
    with pytest.raises(FrozenInstanceError):
        memories[0].context = "d"  # type: ignore[misc]


def _file(records: list[dict | str]) -> bytes:
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    return ("\n".join(lines) + "\n").encode()


def _both_ways(data: bytes) -> tuple[tuple, tuple]:
    build = functools.partial(loaded_memory, config=CONFIG)
    check = functools.partial(check_loaded_line, config=CONFIG)
    slow = live_records(data, build, check)
    fast = live_records(
        data,
        build,
        check,
        lines_pass=functools.partial(lines_pass_rules, config=CONFIG),
        build_block=functools.partial(plain_memories, config=CONFIG),
    )
    return slow, fast


def test_updates_tombstones_and_odd_lines_read_the_same_in_bulk() -> None:
    rng = random.Random(5)
    perturbed = (_perturbed(rng) for _ in range(600))
    records: list[dict | str] = [
        r for r in perturbed if isinstance(r.get("id"), str) and "NaN" not in json.dumps(r)
    ]
    ids = [r["id"] for r in records if isinstance(r, dict)]
    for rid in rng.sample(ids, 40):  # deletions, some saved again after
        records.insert(rng.randrange(len(records)), {"id": rid, "_deleted": True})
    records += [dict(copy.deepcopy(BASE), id=r, content=f"again {r}") for r in rng.sample(ids, 40)]
    data = _file(records)
    lines_pass = functools.partial(lines_pass_rules, config=CONFIG)
    assert jsonl_lines._parsed_in_bulk(data, lines_pass) is not None  # the bulk way is taken
    slow, fast = _both_ways(data)
    assert fast == slow
    assert len(slow[0]) > 100
    assert slow[1]  # records the rules refuse, reported (and quarantined by the store)
    for odd in ["not json", "[1, 2]", '{"id": 7}', "   ", '{"id": "x", "content": "\\ud800"}']:
        data = _file([*records, odd, *records[:5]])
        assert jsonl_lines._parsed_in_bulk(data, lines_pass) is None
        slow, fast = _both_ways(data)
        assert fast == slow
        reported = any(b.raw == odd.encode() for b in fast[1])
        assert reported == bool(odd.strip())  # a blank line is skipped, not quarantined


def _reference_terms(word: str, stem: bool) -> tuple[str, ...]:
    """The rule for one word, without the shortcut for plain words."""
    if word in STOP_WORDS:
        return ()
    parts = [p for p in _COMPOUND_SEP_RE.split(word) if p and p not in STOP_WORDS]
    raw = [word, *parts] if len(parts) > 1 or (parts and parts[0] != word) else [word]
    return tuple(_stem_words(raw)) if stem else tuple(raw)


WORDS = ["node.js", "running", "the", "may-2023", "c++", "o'neil", "x_y", "file", "'s", "a-b"]
WORDS += ["½", "x²", "ǆemal", "東京", "ﬁle", "straße", "i̇stanbul", "a", "42", "3.14", "#tag"]


@pytest.mark.parametrize("stem", [True, False])
def test_plain_words_and_chunks_get_the_terms_of_the_general_rule(stem: bool) -> None:
    cache = TermCache(stem=stem)
    assert {w: cache[w] for w in WORDS} == {w: _reference_terms(w, stem) for w in WORDS}
    docs = [(f"d{i}", f"{w} {w.upper()} and {w}.", None) for i, w in enumerate(WORDS)]
    bulk, single = TextIndex(stem=stem), TextIndex(stem=stem)
    bulk.add_many(docs)  # whitespace chunks through their own cache
    for doc in docs:
        single.add(*doc)  # tokenize(): the regex over the whole text
    for w in WORDS:
        expected = [
            t for word in _TOKEN_RE.findall(w.lower()) for t in _reference_terms(word, stem)
        ]
        assert tokenize(w, stem=stem) == expected
        assert bulk.scores(expected) == single.scores(expected)
