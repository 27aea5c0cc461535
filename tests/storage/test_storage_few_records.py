"""FewRecords: a few records of a JSONL store read and changed without loading it; every
answer is the one the store gives, and what it appends every store reads back."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cortexgraph.storage import MemoryNotFoundError, Relation, open_store
from cortexgraph.storage.few_records import FewRecords
from cortexgraph.storage.models import new_id

NOW = 1_760_000_000


def _history(path: Path):
    """A store whose files hold updates, deletions (a tombstoned memory and relation), a
    memory whose id appears in another's text, and an unreadable line."""
    store = open_store(path)
    a = store.save("Alpha about Postgres", now=NOW)
    b = store.save("Beta about Redis", now=NOW)
    c = store.save("Gamma, deleted later", now=NOW)
    d = store.save(f"Delta mentions {a.id} in its text", now=NOW)
    store.update(a.id, content="Alpha about Postgres 16")
    ab = store.add_relation(a.id, b.id, "related", now=NOW)
    store.add_relation(a.id, c.id, "related", now=NOW)  # goes with c
    gone = store.add_relation(b.id, d.id, "supports", now=NOW)
    store.delete_relation(gone.id)
    store.put_relation(replace(ab, strength=0.9))
    store.delete(c.id)
    with (path / "memories.jsonl").open("a") as f:
        f.write('{"id": "torn\n')
    return store, [a.id, b.id, c.id, d.id, "0f0f0f0f-0000-4000-8000-000000000000"]


def test_answers_are_the_stores_and_reading_writes_nothing(tmp_path: Path) -> None:
    store, ids = _history(tmp_path)
    kinds = (None, "related", "supports")
    expected = store.find_many(ids), [store.relations(i, k) for i in ids for k in kinds]
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    # (the lock is held inside: in this thread, the store is asked before, not inside)
    with FewRecords(tmp_path) as few:
        found = few.find_many(ids), [few.relations(i, k) for i in ids for k in kinds]
    assert found == expected
    assert sum(map(len, expected[1])) == 4  # a-b twice (related, any kind), b-d never
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == files


def test_what_it_appends_every_store_reads_back(tmp_path: Path) -> None:
    store, (a, b, c, d, _) = _history(tmp_path)
    with FewRecords(tmp_path) as few:
        written = few.modify_many([a, c, d], lambda m: replace(m, use_count=m.use_count + 1))
        link = few.put_relation(Relation(new_id(), b, d, "related", 0.3, NOW, {"source": "x"}))
        with pytest.raises(MemoryNotFoundError):
            few.put_relation(Relation(new_id(), a, c, "related", 0.3, NOW, {}))
        assert few.find_many([a, d]) == written  # its own appends are read back at once
    assert [m.id for m in written] == [a, d]
    for reader in (store, open_store(tmp_path)):  # the open one catches up, a new one loads
        assert reader.find_many([a, d]) == written
        assert link in reader.relations(b, "related")


def test_a_missing_store_is_empty_and_is_not_created(tmp_path: Path) -> None:
    with FewRecords(tmp_path / "none") as few:
        assert few.find_many(["0f0f0f0f-0000-4000-8000-000000000000"]) == []
        assert few.modify_many(["0f0f0f0f-0000-4000-8000-000000000000"], lambda m: m) == []
    assert not (tmp_path / "none").exists()
