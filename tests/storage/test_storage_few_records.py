"""FewRecords: a few records of a JSONL store read and changed without loading it; every
answer is the one the store gives, and what it appends every store reads back."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from cortexgraph.storage import MemoryNotFoundError, Relation, few_records, open_store
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


# Whole files searched id by id before one pass finds the rest: every way, and the default's mix.
SEARCHES = pytest.mark.parametrize("searches", [0, 1, few_records._SEARCHES, 10**9])


@SEARCHES
def test_answers_are_the_stores_and_reading_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, searches: int
) -> None:
    monkeypatch.setattr(few_records, "_SEARCHES", searches)
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


def _web(path: Path) -> list[str]:
    """A store where one memory (the hub) has 33 relations, saved a few to a second (ties go
    by save order): some changed later (strength), deleted, deleted and put back (saved anew),
    moved to other memories, one moved onto the hub, some gone with a deleted memory; and
    relations among the other memories. Returns the memory ids (the hub's first)."""
    store = open_store(path)
    hub, *others = [store.save(f"memory {i} about topic {i % 7}", now=NOW) for i in range(12)]
    kinds = ("related", "supports", "causes")
    rels = []
    for i, other in enumerate(others * 3):
        ends = (hub.id, other.id) if i % 2 else (other.id, hub.id)
        rels.append(store.add_relation(*ends, kinds[i % 3], now=NOW + i // 5))
    apart = [
        store.add_relation(others[i % 11].id, others[(i + 3) % 11].id, kinds[i % 2], now=NOW)
        for i in range(20)
    ]
    for r in rels[::4]:
        store.put_relation(replace(r, strength=0.7))
    for r in rels[1::6]:
        store.delete_relation(r.id)
    for r in (rels[2], rels[8]):  # put back: saved after every other
        store.delete_relation(r.id)
        store.put_relation(replace(r, strength=0.4))
    store.put_relation(replace(rels[3], from_memory_id=others[0].id, to_memory_id=others[1].id))
    store.put_relation(replace(apart[0], to_memory_id=hub.id))
    store.delete(others[5].id)  # its relations with it
    return [hub.id, *(o.id for o in others)]


def _insert_lines(path: Path, at: float, lines: list[bytes]) -> None:
    old = path.read_bytes().splitlines(keepends=True)
    cut = int(len(old) * at)
    path.write_bytes(b"".join([*old[:cut], *(line + b"\n" for line in lines), *old[cut:]]))


@SEARCHES
def test_a_memory_with_many_relations_has_the_stores_relations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, searches: int
) -> None:
    """The newest line of each relation, as a fresh store reads the same files: lines it
    cannot read (torn, not a record, over the size limit, a lone surrogate) are passed over,
    and an older line of the same relation counts."""
    monkeypatch.setattr(few_records, "_SEARCHES", searches)
    ids = _web(tmp_path)
    rel_path = tmp_path / "relations.jsonl"
    newest = [json.loads(line) for line in rel_path.read_bytes().splitlines()]
    live = [r for r in newest if r.get("_deleted") is not True]
    _insert_lines(rel_path, 0.5, [b'{"id": "torn', b"[1, 2]", b'{"from_memory_id": "x"}'])
    big = dict(live[-1], metadata={"pad": "x" * 1_000_001})  # newer, but over the limit
    lone = json.dumps(dict(live[-2], strength=0.1, metadata={"x": "\ud800"})).encode()
    _insert_lines(rel_path, 1.0, [json.dumps(big).encode(), lone])
    kinds = (None, "related", "supports", "causes")
    asked = [*ids[:7], "0f0f0f0f-0000-4000-8000-000000000000"]
    with FewRecords(tmp_path) as few:
        found = [few.relations(mid, kind) for mid in asked for kind in kinds]
    store = open_store(tmp_path)  # quarantines the unreadable lines: after FewRecords read them
    assert store.quarantined_lines == 5
    assert found == [store.relations(mid, kind) for mid in asked for kind in kinds]
    hub = found[0]
    assert len(hub) == 24  # 33: 6 deleted, 1 moved off, 3 gone with their memory, 1 moved on
    assert [r.created_at for r in hub] == sorted(r.created_at for r in hub)
    assert len({r.created_at for r in hub}) < len(hub)  # ties, ordered as the store orders them
