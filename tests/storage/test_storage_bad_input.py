"""Bad input raises a typed error that says what to fix, and leaves the store's files as they were."""

from __future__ import annotations

import pytest

from cortexgraph.storage import (
    ContentTooLargeError,
    InvalidInputError,
    JSONLStore,
    MemoryNotFoundError,
    StorageError,
    StoreConfig,
)
from cortexgraph.storage.models import Memory, Relation

GOOD_ID = "3f2b8c1e-9d4a-4e7b-8f1a-2c3d4e5f6a7b"


@pytest.fixture
def seeded(store, now):
    a = store.save("alpha memory", tags=["t"], now=now)
    b = store.save("beta memory", now=now)
    store.add_relation(a.id, b.id, now=now)
    return store, a, b


BAD_CALLS = {
    "empty content": (lambda s, a, b: s.save("   "), InvalidInputError, "non-empty"),
    "content not a string": (lambda s, a, b: s.save(42), InvalidInputError, "string"),
    "tags not strings": (
        lambda s, a, b: s.save("x", tags=["ok", 3]),
        InvalidInputError,
        "3 is int",
    ),
    "tags a bare string": (lambda s, a, b: s.save("x", tags="work"), InvalidInputError, "list"),
    "empty tag": (lambda s, a, b: s.save("x", tags=[" "]), InvalidInputError, "empty"),
    "entities not strings": (
        lambda s, a, b: s.save("x", entities=[None]),
        InvalidInputError,
        "entities",
    ),
    "strength above 2": (
        lambda s, a, b: s.save("x", strength=2.5),
        InvalidInputError,
        "between 0.0 and 2",
    ),
    "strength below 0": (lambda s, a, b: s.save("x", strength=-0.1), InvalidInputError, "between"),
    "strength nan": (
        lambda s, a, b: s.save("x", strength=float("nan")),
        InvalidInputError,
        "between",
    ),
    "strength a string": (lambda s, a, b: s.save("x", strength="1"), InvalidInputError, "number"),
    "extra not a mapping": (lambda s, a, b: s.save("x", extra=[1]), InvalidInputError, "extra"),
    "extra not json": (
        lambda s, a, b: s.save("x", extra={"f": object()}),
        InvalidInputError,
        "JSON",
    ),
    "malformed id get": (
        lambda s, a, b: s.get("../../etc/passwd"),
        InvalidInputError,
        "malformed memory id",
    ),
    "id not a string": (lambda s, a, b: s.get(123), InvalidInputError, "malformed"),
    "update missing": (
        lambda s, a, b: s.update(GOOD_ID, content="x"),
        MemoryNotFoundError,
        GOOD_ID,
    ),
    "update strength": (lambda s, a, b: s.update(a.id, strength=3), InvalidInputError, "strength"),
    "update empty content": (
        lambda s, a, b: s.update(a.id, content=""),
        InvalidInputError,
        "non-empty",
    ),
    "update last_used text": (
        lambda s, a, b: s.update(a.id, last_used="soon"),
        InvalidInputError,
        "last_used",
    ),
    "update negative count": (
        lambda s, a, b: s.update(a.id, use_count=-1),
        InvalidInputError,
        "negative",
    ),
    "update status": (lambda s, a, b: s.update(a.id, status="lost"), InvalidInputError, "status"),
    "update tags": (lambda s, a, b: s.update(a.id, tags=[1]), InvalidInputError, "strings"),
    "delete malformed": (lambda s, a, b: s.delete("not an id!"), InvalidInputError, "malformed"),
    "relation type": (
        lambda s, a, b: s.add_relation(a.id, b.id, "likes"),
        InvalidInputError,
        "choose one of",
    ),
    "relation self": (
        lambda s, a, b: s.add_relation(a.id, a.id),
        InvalidInputError,
        "two different",
    ),
    "relation strength": (
        lambda s, a, b: s.add_relation(a.id, b.id, strength=1.5),
        InvalidInputError,
        "1.0",
    ),
    "relation metadata": (
        lambda s, a, b: s.add_relation(a.id, b.id, metadata="x"),
        InvalidInputError,
        "metadata",
    ),
    "relation to missing": (
        lambda s, a, b: s.add_relation(a.id, GOOD_ID),
        MemoryNotFoundError,
        GOOD_ID,
    ),
    "put not a memory": (lambda s, a, b: s.put({"id": GOOD_ID}), InvalidInputError, "Memory"),
    "put_many one bad": (
        lambda s, a, b: s.put_many(
            [Memory(id=GOOD_ID, content="ok"), Memory(id="bad id", content="x")]
        ),
        InvalidInputError,
        "malformed",
    ),
    "put_relation bad": (
        lambda s, a, b: s.put_relation(Relation(id="r 1", from_memory_id=a.id, to_memory_id=b.id)),
        InvalidInputError,
        "relation id",
    ),
    "search top_k": (lambda s, a, b: s.search("x", top_k=10_000), InvalidInputError, "top_k"),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_input_raises_typed_error_and_changes_nothing(seeded, folder_bytes, name, now):
    store, a, b = seeded
    call, error, message = BAD_CALLS[name]
    files_before = folder_bytes()
    memories_before = sorted(store.list(), key=lambda m: m.id)
    relations_before = store.relations()
    with pytest.raises(error) as info:
        call(store, a, b)
    assert message in str(info.value)
    assert folder_bytes() == files_before
    assert sorted(store.list(), key=lambda m: m.id) == memories_before
    assert store.relations() == relations_before


@pytest.mark.parametrize("limit", [10, 1000])
def test_content_limit_is_configurable(store_kind, tmp_path, limit, folder_bytes):
    from cortexgraph.storage import InMemoryStore

    config = StoreConfig(max_content_bytes=limit)
    store = InMemoryStore(config) if store_kind == "memory" else JSONLStore(tmp_path / "s", config)
    store.save("x" * limit)
    before = folder_bytes()
    with pytest.raises(ContentTooLargeError, match=f"limit is {limit:,}"):
        store.save("x" * (limit + 1))
    with pytest.raises(ContentTooLargeError, match="bytes"):  # the limit counts UTF-8 bytes
        store.save("é" * (limit // 2 + 1))
    assert folder_bytes() == before and len(store) == 1


def test_default_content_limit_is_100kb(store):
    store.save("x" * 100_000)
    with pytest.raises(ContentTooLargeError, match="CORTEXGRAPH_MAX_CONTENT_BYTES"):
        store.save("x" * 100_001)


def test_storage_path_that_is_a_file_is_rejected(tmp_path):
    path = tmp_path / "not-a-dir"
    path.write_text("hello")
    with pytest.raises(InvalidInputError, match="is a file, not a directory"):
        JSONLStore(path)
    assert path.read_text() == "hello"


def test_storage_path_under_a_file_is_a_storage_error(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(StorageError, match="cannot create storage directory"):
        JSONLStore(tmp_path / "f" / "stm")


def test_typed_errors_are_also_builtin_errors():
    assert issubclass(InvalidInputError, ValueError)
    assert issubclass(MemoryNotFoundError, KeyError)
    assert str(MemoryNotFoundError("no memory with id 'x'")) == "no memory with id 'x'"
