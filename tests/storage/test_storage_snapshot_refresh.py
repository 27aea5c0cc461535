"""A store's load snapshots refreshed on request while it stays open (``refresh_snapshots``,
storage/snapshot_refresh.py): the next open applies no line, and a snapshot never claims
bytes its view was not read from, whatever other writers do meanwhile."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import cortexgraph.storage.snapshot_refresh as snapshot_refresh
from cortexgraph.storage import JSONLStore, StoreConfig
from cortexgraph.storage.index_snapshot import SNAPSHOT_NAME, snapshot_size
from cortexgraph.storage.relation_snapshot import RELATIONS_SNAPSHOT_NAME
from cortexgraph.storage.text_index import TextIndex

NOW = 1_700_000_000
ALWAYS = StoreConfig(snapshot_min_bytes=1)


@pytest.fixture
def server(tmp_path: Path) -> JSONLStore:
    """A store with a snapshot, opened before the writes that follow (as the MCP server is)."""
    first = JSONLStore(tmp_path, config=ALWAYS)
    for i in range(30):
        first.save(f"note {i} about kayak trips", tags=["t"], context=f"ctx word{i}", now=NOW)
    JSONLStore(tmp_path, config=ALWAYS)  # a cold open writes the snapshot
    store = JSONLStore(tmp_path, config=ALWAYS)
    assert store.snapshot_tails() == {SNAPSHOT_NAME: 0, RELATIONS_SNAPSHOT_NAME: 0}
    return store


def _writes(store: JSONLStore, tag: str = "new") -> None:
    kept = store.list()
    for i in range(6):
        store.save(f"{tag} kayak trip {i} down the river", extra={"k": i}, now=NOW)
    store.touch(kept[0].id, now=NOW + 5)
    store.update(kept[1].id, content="note 1, edited: a canoe trip")
    store.delete(kept[2].id)


def _view(store: JSONLStore) -> tuple:
    hits = [r.memory.id for r in store.search("kayak word7 canoe", top_k=8, now=NOW)]
    return sorted(store.list(), key=lambda m: m.id), hits, store.stats(now=NOW)


def _file(path: Path) -> int:
    return (path / "memories.jsonl").stat().st_size


def test_a_refresh_covers_every_line_and_the_next_open_applies_none(
    server: JSONLStore, tmp_path: Path, json_loads: list[int]
) -> None:
    _writes(server)
    assert server.snapshot_tails()[SNAPSHOT_NAME] > 0
    assert server.refresh_snapshots(0) == [SNAPSHOT_NAME]
    assert snapshot_size(tmp_path, server._rules) == _file(tmp_path)
    assert server.snapshot_tails()[SNAPSHOT_NAME] == 0
    json_loads.clear()
    reopened = JSONLStore(tmp_path, config=ALWAYS)
    assert json_loads == [] and reopened._view_from_snapshot
    assert _view(reopened) == _view(JSONLStore(tmp_path)) == _view(server)  # the JSONL's
    assert server.refresh_snapshots(0) == []  # nothing past it now


def test_only_a_tail_past_the_given_bytes_is_refreshed(server: JSONLStore, tmp_path: Path) -> None:
    covered = snapshot_size(tmp_path, server._rules)
    _writes(server)
    tail = _file(tmp_path) - covered
    assert server.snapshot_tails()[SNAPSHOT_NAME] == tail
    assert server.refresh_snapshots(tail) == []
    assert snapshot_size(tmp_path, server._rules) == covered
    assert server.refresh_snapshots(tail - 1) == [SNAPSHOT_NAME]


def test_a_file_below_the_snapshot_size_gets_none(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)  # 1 MB before any snapshot
    for i in range(3):
        store.save(f"note {i}", now=NOW)
    _writes(store)
    assert store.snapshot_tails() == {SNAPSHOT_NAME: 0, RELATIONS_SNAPSHOT_NAME: 0}
    assert store.refresh_snapshots(0) == []
    assert not (tmp_path / SNAPSHOT_NAME).exists()


def test_the_relations_snapshot_is_refreshed_too(server: JSONLStore, tmp_path: Path) -> None:
    a, b, c = server.list()[:3]
    server.add_relation(a.id, b.id, now=NOW)
    JSONLStore(tmp_path, config=ALWAYS)  # writes the relations' snapshot (a cold one)
    server.add_relation(b.id, c.id, now=NOW)
    assert server.refresh_snapshots(0) == [RELATIONS_SNAPSHOT_NAME]
    relations = (tmp_path / "relations.jsonl").stat().st_size
    assert snapshot_size(tmp_path, server._rules, RELATIONS_SNAPSHOT_NAME) == relations
    reopened = JSONLStore(tmp_path, config=ALWAYS)
    assert reopened.relations() == server.relations() and len(server.relations()) == 2


@pytest.mark.parametrize("writer", ["this store", "another process"])
def test_writes_after_the_view_is_taken_stay_in_the_tail(
    server: JSONLStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str
) -> None:
    """A save once the store's lock is released (the text index is copied, not shared) or
    another process's append (past the bytes the view holds) is not in the snapshot: the
    next open applies it after a snapshot that still matches its memories and index."""
    _writes(server)
    viewed = _file(tmp_path)
    other = JSONLStore(tmp_path)
    later = []
    real = snapshot_refresh._prefix_digest

    def write_then_read(fd: int, size: int) -> str:
        target = server if writer == "this store" else other
        later.append(target.save("a kayak saved while the snapshot was written", now=NOW))
        target.delete(server.list()[3].id)  # a document of the index's segment
        return real(fd, size)

    monkeypatch.setattr(snapshot_refresh, "_prefix_digest", write_then_read)
    assert server.refresh_snapshots(0) == [SNAPSHOT_NAME]
    assert snapshot_size(tmp_path, server._rules) == viewed < _file(tmp_path)
    reopened = JSONLStore(tmp_path, config=ALWAYS)
    assert reopened._view_from_snapshot and later[0].id in reopened
    assert _view(reopened) == _view(JSONLStore(tmp_path))


def test_a_file_rewritten_meanwhile_gets_no_snapshot_of_the_old_bytes(
    server: JSONLStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _writes(server)
    real = snapshot_refresh._still_at_path

    def compacted_first(fd: int, path: Path) -> bool:
        JSONLStore(tmp_path, config=ALWAYS).compact()  # a new file, and its own snapshot
        return real(fd, path)

    monkeypatch.setattr(snapshot_refresh, "_still_at_path", compacted_first)
    assert server.refresh_snapshots(0) == []
    assert snapshot_size(tmp_path, server._rules) == _file(tmp_path)  # the compaction's
    reopened = JSONLStore(tmp_path, config=ALWAYS)
    assert reopened._view_from_snapshot
    assert _view(reopened) == _view(JSONLStore(tmp_path))


def test_a_refresh_catches_up_with_another_process_first(
    server: JSONLStore, tmp_path: Path
) -> None:
    other = JSONLStore(tmp_path)
    _writes(other, "other")
    other.compact()  # a rewrite too: the server's view is reloaded
    _writes(other, "after")
    assert server.refresh_snapshots(0) == [SNAPSHOT_NAME]
    assert snapshot_size(tmp_path, server._rules) == _file(tmp_path)
    reopened = JSONLStore(tmp_path, config=ALWAYS)
    assert reopened._view_from_snapshot
    assert _view(reopened) == _view(JSONLStore(tmp_path)) == _view(other)


def test_a_copied_text_index_keeps_what_it_held_while_the_original_changes() -> None:
    index = TextIndex()
    index.add_many([(f"d{i}", f"word{i} kayak trip", f"ctx {i}") for i in range(20)])
    index.add("d20", "overlay canoe kayak", "ctx overlay")
    index.remove("d4")
    before = pickle.dumps(index, protocol=5)
    copy = index.copy()
    scores = copy.top("kayak canoe word3 ctx", 30)
    index.add("d21", "a new kayak doc")  # overlay grows
    index.add("d3", "word3 replaced by a canoe")  # a segment document replaced
    index.remove("d5")  # a segment document removed
    index.remove("d20")  # an overlay document removed
    index.set_context("d6", "another context")
    index.add_many([(f"e{i}", "kayak", None) for i in range(200)])  # slots grow
    restored = pickle.loads(before)
    restored.serial = copy.serial  # the one field that differs
    assert pickle.dumps(copy, protocol=5) == pickle.dumps(restored, protocol=5)
    assert copy.top("kayak canoe word3 ctx", 30) == scores
    assert set(copy.doc_ids()) == {f"d{i}" for i in range(21)} - {"d4"}
