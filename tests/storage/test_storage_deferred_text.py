"""A store opened from its snapshot reads its text index on first use, and searches exactly as
one loaded from the JSONL: changes made meanwhile are replayed, damaged bytes rebuilt."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import cortexgraph.storage.deferred_text as deferred_text
from cortexgraph.storage import JSONLStore, StoreConfig
from cortexgraph.storage.index_snapshot import SNAPSHOT_NAME
from cortexgraph.storage.text_index import TextIndex

NOW = 1_700_000_000
SNAP = StoreConfig(snapshot_min_bytes=1)
QUERIES = ("kayak river", "lake trip", "canoe word7", "paddle")


@pytest.fixture
def unpickled(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per text index a snapshot's bytes were unpickled into."""
    calls: list[int] = []
    real = TextIndex.from_parts.__func__  # type: ignore[attr-defined]

    def counting(cls, slot_ids, state):
        calls.append(len(slot_ids))
        return real(cls, slot_ids, state)

    monkeypatch.setattr(TextIndex, "from_parts", classmethod(counting))
    return calls


def _snapshotted(path: Path) -> list:
    store = JSONLStore(path, config=SNAP)
    saved = [
        store.save(
            f"kayak trip {i} on the lake, word{i}", tags=["trip"], context=f"paddle {i}", now=NOW
        )
        for i in range(30)
    ]
    JSONLStore(path, config=SNAP)  # a cold open writes the snapshot
    return saved


def _searches(store: JSONLStore) -> list[list[tuple[str, float]]]:
    return [[(r.memory.id, r.score) for r in store.search(q, top_k=50, now=NOW)] for q in QUERIES]


def test_the_text_index_is_unpickled_on_first_search_and_finds_the_same(
    tmp_path, unpickled, json_loads
) -> None:
    _snapshotted(tmp_path)
    json_loads.clear()
    store = JSONLStore(tmp_path, config=SNAP)
    assert json_loads == [] and unpickled == []  # opened from the snapshot, index not read
    assert len(store.list()) == 30 and unpickled == []
    found = _searches(store)
    assert len(unpickled) == 1
    assert found == _searches(JSONLStore(tmp_path))  # what the JSONL alone loads to


def test_changes_before_the_first_search_are_replayed_in_order(tmp_path, unpickled) -> None:
    saved = _snapshotted(tmp_path)
    store = JSONLStore(tmp_path, config=SNAP)
    store.save("a canoe on the river, word7", tags=["trip"], now=NOW)
    store.update(saved[1].id, content="paddle boards on the kayak river")  # new text
    store.touch(saved[2].id, now=NOW + 60)  # same text: kept
    store.delete(saved[3].id)
    store.update(saved[4].id, tags=["river"])  # tags are searched too
    other = JSONLStore(tmp_path)  # another process's write, read as the store catches up
    other.save("lake kayak rental", now=NOW)
    assert unpickled == []
    found = _searches(store)
    assert len(unpickled) == 1
    assert found == _searches(JSONLStore(tmp_path))
    assert store.text_index.doc_ids() == {m.id for m in store.list()}


def test_damaged_index_bytes_are_rebuilt_from_the_memories(tmp_path, unpickled, json_loads) -> None:
    _snapshotted(tmp_path)
    snap = tmp_path / SNAPSHOT_NAME
    raw = bytearray(snap.read_bytes())
    raw[-10] ^= 0xFF  # the index's bytes are the file's last: its own check value fails
    snap.write_bytes(bytes(raw))
    json_loads.clear()
    store = JSONLStore(tmp_path, config=SNAP)
    assert json_loads == []  # the memories still came from the snapshot's body
    store.save("lake kayak rental", now=NOW)
    assert _searches(store) == _searches(JSONLStore(tmp_path))
    assert unpickled == []  # rebuilt, not unpickled


def test_a_store_that_never_searches_loads_its_index_after_many_changes(
    tmp_path, unpickled, monkeypatch
) -> None:
    saved = _snapshotted(tmp_path)
    monkeypatch.setattr(deferred_text, "MAX_DEFERRED_CHANGES", 3)
    store = JSONLStore(tmp_path, config=SNAP)
    store.save("one more kayak", now=NOW)
    store.save("and a canoe", now=NOW)
    assert unpickled == []
    store.delete(saved[0].id)  # the third change: the index is loaded, the changes applied
    assert len(unpickled) == 1
    assert _searches(store) == _searches(JSONLStore(tmp_path))


def test_a_refreshed_snapshot_of_an_unread_index_keeps_it_whole(tmp_path, unpickled) -> None:
    _snapshotted(tmp_path)
    with (tmp_path / "memories.jsonl").open("ab") as f:  # past the refresh size: rewritten
        f.write(b"\n" * 64)
    JSONLStore(tmp_path, config=StoreConfig(snapshot_min_bytes=1, snapshot_refresh_bytes=32))
    with (tmp_path / SNAPSHOT_NAME).open("rb") as f:
        assert pickle.load(f)["size"] == (tmp_path / "memories.jsonl").stat().st_size
    assert unpickled == []  # the index's bytes were written again as they were read
    store = JSONLStore(tmp_path, config=SNAP)
    assert _searches(store) == _searches(JSONLStore(tmp_path))


def test_a_snapshot_refresh_before_the_first_search_snapshots_the_changes(
    tmp_path, json_loads, unpickled
) -> None:
    _snapshotted(tmp_path)
    store = JSONLStore(tmp_path, config=SNAP)
    for i in range(5):
        store.save(f"kayak note {i} on the river", now=NOW)
    assert store.refresh_snapshots(0) == [SNAPSHOT_NAME]
    assert len(unpickled) == 1  # a copy, loaded after the store's lock; the store's own waits
    store.save("one more canoe", now=NOW)  # still kept, not applied
    assert len(unpickled) == 1
    json_loads.clear()
    reopened = JSONLStore(tmp_path, config=SNAP)
    assert json_loads == []  # from the refreshed snapshot, nothing past it
    assert _searches(reopened) == _searches(JSONLStore(tmp_path)) == _searches(store)
    assert len(unpickled) == 3  # reopened's and the store's own, on their first search


def test_load_search_index_reads_it_ahead_of_the_first_search(tmp_path, unpickled) -> None:
    saved = _snapshotted(tmp_path)
    store = JSONLStore(tmp_path, config=SNAP)
    store.delete(saved[0].id)  # kept while unread, replayed at the read
    assert not store.search_index_loaded
    assert store.load_search_index() is True
    assert store.search_index_loaded and len(unpickled) == 1
    assert store.load_search_index() is False  # once
    assert _searches(store) == _searches(JSONLStore(tmp_path))
    assert len(unpickled) == 1  # the searches found it read
