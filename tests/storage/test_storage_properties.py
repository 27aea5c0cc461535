"""Property tests: the JSON round trip, and a store driven by random operations vs a dict."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from cortexgraph.storage import InMemoryStore, JSONLStore, MemoryNotFoundError, MemoryStatus
from cortexgraph.storage.models import Memory, MemoryMeta

text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60).filter(
    str.strip
)
tag = st.text(st.characters(whitelist_categories=("L", "N")), min_size=1, max_size=12)
json_scalar = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=10)
times = st.integers(0, 4_000_000_000)

memories = st.builds(
    Memory,
    id=st.uuids().map(str),
    content=text,
    meta=st.builds(
        MemoryMeta,
        tags=st.lists(tag, unique=True, max_size=4).map(tuple),
        source=st.none() | text,
        context=st.none() | text,
        extra=st.dictionaries(st.text(max_size=8), json_scalar, max_size=3),
    ),
    entities=st.lists(tag, unique=True, max_size=3).map(tuple),
    created_at=times,
    last_used=times,
    use_count=st.integers(0, 10_000),
    strength=st.floats(0.0, 2.0, allow_nan=False),
    status=st.sampled_from(list(MemoryStatus)),
    promoted_at=st.none() | times,
    promoted_to=st.none() | text,
    review_priority=st.floats(0.0, 1.0),
    last_review_at=st.none() | times,
    review_count=st.integers(0, 100),
    cross_domain_count=st.integers(0, 100),
)


@given(memories)
def test_memory_json_line_round_trip(memory):
    line = json.dumps(memory.to_json(), ensure_ascii=False)
    assert "\n" not in line  # one record, one line
    assert Memory.from_json(json.loads(line)) == memory


@given(memories)
def test_put_then_reopen_returns_the_same_memory(memory):
    with tempfile.TemporaryDirectory() as d:
        JSONLStore(d).put(memory)
        assert JSONLStore(d).get(memory.id) == memory


class StoreVersusDict(RuleBasedStateMachine):
    """Random saves, updates, touches, deletes and compactions; compared with a plain dict."""

    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        self._dir = tempfile.TemporaryDirectory()
        self.path = Path(self._dir.name)
        self.store = JSONLStore(self.path)
        self.memory = InMemoryStore()
        self.model: dict[str, Memory] = {}

    @rule(target=ids, content=text, tags=st.lists(tag, unique=True, max_size=3), at=times)
    def save(self, content, tags, at):
        m = self.store.save(content, tags=tags, now=at)
        self.memory.put(m)
        self.model[m.id] = m
        return m.id

    @rule(mid=ids, content=text)
    def update(self, mid, content):
        if mid not in self.model:
            return
        self.model[mid] = self.store.update(mid, content=content)
        assert self.memory.update(mid, content=content) == self.model[mid]

    @rule(mid=ids, at=times)
    def touch(self, mid, at):
        if mid not in self.model:
            return
        self.model[mid] = self.store.touch(mid, boost_strength=True, now=at)
        self.memory.touch(mid, boost_strength=True, now=at)

    @rule(mid=ids)
    def delete(self, mid):
        if mid in self.model:
            self.store.delete(mid)
            self.memory.delete(mid)
            del self.model[mid]
        else:
            try:
                self.store.delete(mid)
            except MemoryNotFoundError:
                pass
            else:
                raise AssertionError("deleting a deleted memory must raise")

    @rule()
    def compact(self):
        self.store.compact()

    @rule()
    def reopen(self):
        self.store = JSONLStore(self.path)

    @invariant()
    def matches_model(self):
        assert {m.id: m for m in self.store.list()} == self.model
        assert {m.id: m for m in self.memory.list()} == self.model

    def teardown(self):
        assert {m.id: m for m in JSONLStore(self.path).list()} == self.model
        self._dir.cleanup()


StoreVersusDict.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_store_versus_dict = StoreVersusDict.TestCase
