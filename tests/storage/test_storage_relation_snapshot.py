"""The relations' snapshot beside relations.jsonl: used only while it matches the file; a torn,
stale or foreign one falls back to parsing the JSONL, and nothing is lost either way."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from cortexgraph.storage import JSONLStore, StoreConfig
from cortexgraph.storage.relation_snapshot import RELATIONS_SNAPSHOT_NAME
from cortexgraph.storage.validation import loaded_relation

NOW = 1_700_000_000
ALWAYS = StoreConfig(snapshot_min_bytes=1)


@pytest.fixture
def relation_parses(parse_counter) -> list[int]:
    """How many relation records each open parses from JSONL (nothing when the snapshot served)."""
    return parse_counter(loaded_relation)


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    store = JSONLStore(tmp_path, config=ALWAYS)
    ms = [store.save(f"note {i}", now=NOW) for i in range(8)]
    for i in range(7):
        store.add_relation(ms[i].id, ms[i + 1].id, "related", strength=0.5, metadata={"i": i})
    store.delete_relation(store.relations(ms[0].id)[0].id)  # a tombstone in the file
    JSONLStore(tmp_path, config=ALWAYS)  # a cold open writes the snapshots
    assert (tmp_path / RELATIONS_SNAPSHOT_NAME).exists()
    return tmp_path


def _relations(store: JSONLStore) -> list:
    return sorted(store.relations(), key=lambda r: r.id)


def _by_memory(store: JSONLStore) -> dict:
    return {m.id: sorted(r.id for r in store.relations(m.id)) for m in store.list()}


def test_relations_round_trip_through_the_snapshot(linked, relation_parses) -> None:
    from_snapshot = JSONLStore(linked, config=ALWAYS)
    assert relation_parses == []
    from_jsonl = JSONLStore(linked)  # below the default threshold: JSONL only
    assert relation_parses == [6]
    assert _relations(from_snapshot) == _relations(from_jsonl)
    assert _by_memory(from_snapshot) == _by_memory(from_jsonl)
    assert {r.metadata["i"] for r in from_snapshot.relations()} == set(range(1, 7))


def test_equal_strings_of_the_relations_snapshot_reopen_as_one_object(linked) -> None:
    parsed = JSONLStore(linked)  # from the JSONL: a string object per value read
    again = JSONLStore(linked, config=ALWAYS)
    rels = sorted(again.relations(), key=lambda r: r.id)
    assert rels == sorted(parsed.relations(), key=lambda r: r.id)
    ends: dict[str, str] = {}
    for r in rels:  # a memory at the end of two relations: one string object for its id
        for end in (r.from_memory_id, r.to_memory_id):
            assert ends.setdefault(end, end) is end
    assert len({id(r.relation_type) for r in rels}) == 1
    assert len({id(k) for r in rels for k in r.metadata}) == 1
    others = [dict(r.metadata) for r in rels[1:]]
    rels[0].metadata["i"] = 99  # still a dict of its own
    assert [dict(r.metadata) for r in rels[1:]] == others


def test_relations_appended_after_the_snapshot_are_applied(linked, relation_parses) -> None:
    writer = JSONLStore(linked)
    a, b = writer.list()[:2]
    gone = writer.relations()[0]
    added = writer.add_relation(a.id, b.id, "supports")
    writer.delete_relation(gone.id)
    relation_parses.clear()
    store = JSONLStore(linked, config=ALWAYS)
    assert relation_parses == []  # the snapshot, then the appended lines
    ids = {r.id for r in store.relations()}
    assert added.id in ids and gone.id not in ids
    assert _relations(store) == _relations(JSONLStore(linked))


def test_a_rewritten_relations_file_is_parsed_not_snapshotted(linked, relation_parses) -> None:
    store = JSONLStore(linked)
    kept = store.relations()[0]
    lines = (linked / "relations.jsonl").read_bytes().splitlines(keepends=True)
    # another process rewrote it (compaction would too): only one relation's line is left
    (linked / "relations.jsonl").write_bytes(next(ln for ln in lines if kept.id.encode() in ln))
    relation_parses.clear()
    reopened = JSONLStore(linked, config=ALWAYS)
    assert relation_parses == [1]
    assert [r.id for r in reopened.relations()] == [kept.id]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "other state"])
def test_a_damaged_relations_snapshot_is_ignored(linked, relation_parses, damage: str) -> None:
    want = _relations(JSONLStore(linked))
    snap = linked / RELATIONS_SNAPSHOT_NAME
    raw = snap.read_bytes()
    header = pickle.loads(raw)  # the header comes first; the body after it
    if damage == "other state":  # checksums that match, a body that is no relations' state
        from cortexgraph.storage.index_snapshot import digest

        body = pickle.dumps({"id": ["x"]})
        header["body_digest"] = digest(body)
        snap.write_bytes(pickle.dumps(header) + body)
    else:
        snap.write_bytes(
            {"garbage": b"\x00not a pickle", "truncated": raw[: len(raw) // 2], "empty": b""}[
                damage
            ]
        )
    relation_parses.clear()
    store = JSONLStore(linked, config=ALWAYS)
    assert relation_parses == [6]
    assert _relations(store) == want
    relation_parses.clear()
    assert _relations(JSONLStore(linked, config=ALWAYS)) == want
    assert relation_parses == []  # rewritten by the open that parsed
