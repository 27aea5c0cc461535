"""The lines appended after a snapshot: built in bulk like a cold open's (extras included), bad
ones still quarantined, and the snapshot rewritten once they pass a fixed size."""

from __future__ import annotations

import json
import pickle
from dataclasses import replace
from pathlib import Path

import pytest

import cortexgraph.storage.jsonl_store as jsonl_store
from cortexgraph.storage import JSONLStore, StoreConfig
from cortexgraph.storage.index_snapshot import SNAPSHOT_NAME
from cortexgraph.storage.models import Memory
from cortexgraph.storage.record_limits import MAX_JSON_DEPTH

NOW = 1_700_000_000
SNAP = StoreConfig(snapshot_min_bytes=1)
FOUND = {"entities_found": "spacy+rules"}
PROVENANCE = {
    "sources": [{"id": "a", "status": "active"}, {"id": "b", "status": "active"}],
    "cohesion": 1.0,
    "merged_at": NOW,
    "repointed": [],
    "issue_id": "cg-ko3",
}


@pytest.fixture
def one_by_one(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the memory records a store builds one at a time (not in bulk)."""
    built: list[str] = []
    real = jsonl_store.loaded_memory

    def counting(obj, config):
        built.append(obj.get("id"))
        return real(obj, config)

    monkeypatch.setattr(jsonl_store, "loaded_memory", counting)
    return built


def _snapshot_size(path: Path) -> int:
    with (path / SNAPSHOT_NAME).open("rb") as f:
        return pickle.load(f)["size"]


def _view(store: JSONLStore) -> tuple:
    hits = [r.memory.id for r in store.search("kayak trip", top_k=5, now=NOW)]
    return sorted(store.list(), key=lambda m: m.id), hits


def _saved(path: Path, n: int, config: StoreConfig = SNAP) -> list[Memory]:
    store = JSONLStore(path, config=config)
    saved = [
        store.save(f"kayak trip {i} on the lake", tags=["t"], extra=FOUND, now=NOW)
        for i in range(n)
    ]
    JSONLStore(path, config=config)  # a cold open: writes the snapshot
    return saved


def test_appended_lines_build_in_bulk_and_bad_ones_still_quarantine(tmp_path, one_by_one) -> None:
    saved = _saved(tmp_path, 20)
    writer = JSONLStore(tmp_path)
    new = [writer.save(f"kayak trip {i} down the river", extra=FOUND, now=NOW) for i in range(5)]
    writer.update(saved[3].id, extra={**FOUND, "merge": PROVENANCE})
    writer.update(saved[4].id, extra={**FOUND, "merged_into": saved[3].id})
    writer.delete(saved[5].id)
    one_by_one.clear()
    store = JSONLStore(tmp_path, config=SNAP)
    assert one_by_one == []  # old: the 7 lines one at a time
    assert store.get(saved[3].id).meta.extra["merge"] == PROVENANCE
    assert saved[5].id not in store and all(m.id in store for m in new)
    assert _view(store) == _view(JSONLStore(tmp_path))  # what the JSONL alone loads to

    # a record the bulk way cannot vouch for sends its block to the full rules, which refuse
    # it; a torn line is quarantined as before; the good lines around them stand
    writer = JSONLStore(tmp_path)
    writer.save("kayak trip with friends", extra=FOUND, now=NOW)
    writer.update(saved[7].id, extra={**FOUND, "merge": PROVENANCE})
    deep: object = "leaf"
    for _ in range(MAX_JSON_DEPTH + 1):
        deep = {"k": deep}
    too_deep = {**saved[6].to_json(), "meta": {**saved[6].to_json()["meta"], "extra": deep}}
    with (tmp_path / "memories.jsonl").open("ab") as f:
        f.write(json.dumps(too_deep).encode() + b"\n")
        f.write(b'{"id": "torn", "content": \n')
        f.write(json.dumps(saved[8].to_json()).encode() + b"\n")
    one_by_one.clear()
    store = JSONLStore(tmp_path, config=SNAP)
    assert store.quarantined_lines == 2
    assert saved[6].id in one_by_one  # its block left to the full rules, which refuse it
    assert store.get(saved[6].id) == saved[6]  # the last good line stands
    assert store.get(saved[7].id).meta.extra["merge"] == PROVENANCE
    assert (tmp_path / "memories.quarantine.jsonl").read_bytes().count(b"\n") == 2
    assert _view(store) == _view(JSONLStore(tmp_path))


@pytest.mark.parametrize("past", [False, True])
def test_an_open_rewrites_the_snapshot_only_past_the_refresh_size(tmp_path, past: bool) -> None:
    config = replace(SNAP, snapshot_refresh_bytes=4_000)
    saved = _saved(tmp_path, 60, config)  # ~20 KB: a quarter is more than the refresh size
    covered = _snapshot_size(tmp_path)
    assert covered > 4 * config.snapshot_refresh_bytes
    writer = JSONLStore(tmp_path)
    for i in range(20 if past else 2):  # ~340 bytes a line
        writer.touch(saved[i].id, now=NOW + i)
    grown = (tmp_path / "memories.jsonl").stat().st_size - covered
    assert (grown > config.snapshot_refresh_bytes) == past
    store = JSONLStore(tmp_path, config=config)
    size = (tmp_path / "memories.jsonl").stat().st_size
    assert _snapshot_size(tmp_path) == (size if past else covered)
    assert _view(JSONLStore(tmp_path, config=config)) == _view(store)


def test_below_the_refresh_size_a_large_share_of_appends_keeps_the_snapshot(tmp_path) -> None:
    _saved(tmp_path, 8)
    covered = _snapshot_size(tmp_path)
    writer = JSONLStore(tmp_path)
    for i in range(8):  # as many lines again: far past the old quarter of the file
        writer.save(f"kayak trip {i} at dawn", extra=FOUND, now=NOW)
    JSONLStore(tmp_path, config=SNAP)
    assert _snapshot_size(tmp_path) == covered  # under SNAP's 1 MB: not rewritten
