"""The index snapshot beside the JSONL: used only when it matches the file, never trusted over it."""

from __future__ import annotations

import multiprocessing
import pickle
from dataclasses import replace
from pathlib import Path

import pytest
import storage_workers

from cortexgraph.storage import JSONLStore, StoreConfig
from cortexgraph.storage.bulk_records import memories_from_columns, memory_columns
from cortexgraph.storage.index_snapshot import (
    FORMAT,
    SNAPSHOT_NAME,
    digest,
    read_snapshot,
    write_snapshot,
)
from cortexgraph.storage.models import Memory, MemoryMeta, MemoryStatus
from cortexgraph.storage.text_index import TextIndex

NOW = 1_700_000_000
ALWAYS = StoreConfig(snapshot_min_bytes=1)


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, list[Memory]]:
    store = JSONLStore(tmp_path, config=ALWAYS)
    saved = [
        store.save(f"note {i} about kayak trips", tags=["t"], context=f"ctx word{i}", now=NOW)
        for i in range(30)
    ]
    store.delete(saved[0].id)
    JSONLStore(tmp_path, config=ALWAYS)  # a cold open writes the snapshot
    assert (tmp_path / SNAPSHOT_NAME).exists()
    return tmp_path, saved[1:]


def _view(store: JSONLStore) -> tuple:
    hits = [r.memory.id for r in store.search("kayak word7", top_k=5, now=NOW)]
    return sorted(store.list(), key=lambda m: m.id), hits, store.stats(now=NOW)


def test_reopen_uses_snapshot_and_sees_the_same_store(built, json_loads) -> None:
    path, saved = built
    from_snapshot = JSONLStore(path, config=ALWAYS)
    assert json_loads == []
    from_jsonl = JSONLStore(path)  # below the default threshold: JSONL only
    assert json_loads == [len(saved)]
    assert _view(from_snapshot) == _view(from_jsonl)
    assert _view(from_snapshot)[1][0] == saved[6].id  # context 'word7' indexed


def test_lines_appended_after_the_snapshot_are_applied(built, json_loads) -> None:
    path, saved = built
    writer = JSONLStore(path)
    new = writer.save("a new canoe trip", now=NOW)
    writer.touch(saved[1].id, now=NOW + 5)
    writer.delete(saved[2].id)
    json_loads.clear()  # the writer's own open
    store = JSONLStore(path, config=ALWAYS)
    assert json_loads == []
    assert store.get(new.id).content == "a new canoe trip"
    assert store.get(saved[1].id).use_count == 1
    assert saved[2].id not in store
    assert [r.memory.id for r in store.search("canoe", now=NOW)] == [new.id]


def test_a_snapshot_open_indexes_tags_and_entities_on_first_use(built) -> None:
    path, saved = built
    writer = JSONLStore(path)
    writer.update(saved[3].id, tags=["appended"])  # a line after the snapshot
    store = JSONLStore(path, config=ALWAYS)
    # opened from the snapshot: no entity or tag index yet
    assert not store.entities_indexed and not store.tags_indexed
    fresh = store.save("a fresh note", tags=["fresh", "t"], entities=["Zed"], now=NOW)
    store.update(saved[1].id, tags=["moved"], entities=["Zed"])
    store.delete(saved[2].id)
    assert len(store.list(status=MemoryStatus.ACTIVE)) == len(saved)
    assert not store.entities_indexed and not store.tags_indexed

    parsed = JSONLStore(path)  # from the JSONL alone: indexed as it loads
    assert parsed.entities_indexed and parsed.tags_indexed
    for s in (store, parsed):
        kept = {fresh.id, saved[0].id} | {m.id for m in saved[4:]}
        assert {m.id for m in s.list(tags=["t"])} == kept
        assert {m.id for m in s.list(tags=["moved"])} == {saved[1].id}
        assert {m.id for m in s.list(tags=["appended"])} == {saved[3].id}
        assert s.ids_with_entity("zed") == {fresh.id, saved[1].id}
    assert store.entities_indexed
    assert _view(store) == _view(parsed)


def test_edited_file_makes_the_snapshot_stale(built, json_loads) -> None:
    path, saved = built
    jsonl = path / "memories.jsonl"
    jsonl.write_bytes(jsonl.read_bytes().replace(b"note 5 about", b"note 5 ABOUT"))  # same size
    store = JSONLStore(path, config=ALWAYS)
    assert json_loads == [len(saved)]
    assert store.get(saved[4].id).content.startswith("note 5 ABOUT")


def test_compaction_makes_the_snapshot_stale(built, json_loads) -> None:
    path, saved = built
    JSONLStore(path).compact()
    json_loads.clear()  # the compacting store's own open
    store = JSONLStore(path, config=ALWAYS)
    assert json_loads == [len(saved)]
    assert len(store) == len(saved)


def test_compaction_of_a_big_store_leaves_a_snapshot_of_what_it_wrote(built, json_loads) -> None:
    path, saved = built
    compacting = JSONLStore(path, config=ALWAYS)
    later = compacting.save("one more kayak note", context="word7", now=NOW - 50)
    compacting.delete(saved[3].id)
    compacting.compact()
    json_loads.clear()
    from_snapshot = JSONLStore(path, config=ALWAYS)
    assert json_loads == []  # the snapshot served the first open after the compaction
    from_jsonl = JSONLStore(path)  # below the default threshold: JSONL only
    assert json_loads == [len(saved)]
    assert from_snapshot.get(later.id).content == "one more kayak note"
    assert saved[3].id not in from_snapshot
    # The next process sees exactly the compacting process's view, its order and its
    # ranking of the 29 equal "kayak" scores included ...
    for view in (lambda s: [m.id for m in s.list()], _kayak_ranking):
        assert view(from_snapshot) == view(compacting)
    # ... and the same records, stats and scores as parsing the file the compaction wrote
    # (the order of equal scores is the index's slot order, which a parse lays out afresh).
    snap_records, _, snap_stats = _view(from_snapshot)
    jsonl_records, _, jsonl_stats = _view(from_jsonl)
    assert (snap_records, snap_stats) == (jsonl_records, jsonl_stats)
    assert sorted(_kayak_scores(from_snapshot)) == sorted(_kayak_scores(from_jsonl))


def _kayak_ranking(store: JSONLStore) -> list[str]:
    return [r.memory.id for r in store.search("kayak", top_k=40, now=NOW)]


def _kayak_scores(store: JSONLStore) -> list[tuple[str, float]]:
    return [(r.memory.id, r.score) for r in store.search("kayak", top_k=40, now=NOW)]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other format", "empty"])
def test_damaged_snapshot_is_ignored_and_rewritten(built, json_loads, damage: str) -> None:
    path, saved = built
    snap = path / SNAPSHOT_NAME
    raw = snap.read_bytes()
    snap.write_bytes(
        {
            "garbage": b"\x00not a pickle",
            "truncated": raw[: len(raw) // 2],
            "empty": b"",
            "other format": pickle.dumps({"format": FORMAT + 1, "size": 1, "digest": ""}),
        }[damage]
    )
    store = JSONLStore(path, config=ALWAYS)
    assert json_loads == [len(saved)]
    assert sorted(m.id for m in store.list()) == sorted(m.id for m in saved)
    JSONLStore(path, config=ALWAYS)
    assert json_loads == [len(saved)]  # rewritten: the next open used it


def test_a_cold_open_that_quarantines_still_leaves_a_snapshot(built, json_loads) -> None:
    path, saved = built
    (path / SNAPSHOT_NAME).unlink()
    with (path / "memories.jsonl").open("ab") as f:
        f.write(b'{"id": "broken", "content": \n')
    store = JSONLStore(path, config=ALWAYS)  # parses, quarantines the line, writes a snapshot
    assert json_loads == [len(saved)]
    assert store.quarantined_lines == 1
    json_loads.clear()
    again = JSONLStore(path, config=ALWAYS)
    assert json_loads == []  # the snapshot of the rewritten file served
    assert _view(again) == _view(store)
    assert _view(again) == _view(JSONLStore(path))  # and it is what the file loads to


class _Planted:
    def __reduce__(self):
        import os

        return (os.system, ("touch PLANTED",))


def test_planted_snapshot_cannot_run_code(built, json_loads, monkeypatch) -> None:
    path, saved = built
    monkeypatch.chdir(path)
    data = (path / "memories.jsonl").read_bytes()
    body = pickle.dumps(_Planted())  # with a valid checksum: the unpickler itself refuses it
    header = {
        "format": FORMAT,
        "size": len(data),
        "digest": digest(data),
        "body_digest": digest(body),
        "rules": repr(ALWAYS.record_limits()),
    }
    (path / SNAPSHOT_NAME).write_bytes(pickle.dumps(header) + body)
    store = JSONLStore(path, config=ALWAYS)
    assert not (path / "PLANTED").exists()
    assert json_loads == [len(saved)]
    assert len(store) == len(saved)


def test_bad_line_after_the_snapshot_is_quarantined(built) -> None:
    path, saved = built
    with (path / "memories.jsonl").open("ab") as f:
        f.write(b'{"id": "not valid", "content": 5}\n')
    store = JSONLStore(path, config=ALWAYS)
    assert store.stats().quarantined_lines == 1
    assert len(store) == len(saved)


def test_snapshot_pickles_memories_exactly() -> None:
    m = Memory(
        id="m1",
        content="x",
        meta=MemoryMeta(tags=("a",), source="s", extra={"k": [1]}),
        entities=("E",),
        created_at=5,
        last_used=6,
        use_count=2,
        strength=1.5,
        review_priority=0.25,
        unknown={"future_field": 1},
    )
    back = pickle.loads(pickle.dumps(m, protocol=5))
    assert back == m and back.unknown == {"future_field": 1}
    assert replace(back, content="y") != m


def test_processes_reopening_from_snapshots_while_compacting_lose_nothing(tmp_path) -> None:
    path = tmp_path / "stm"
    JSONLStore(path, config=ALWAYS).save("seed", now=NOW)
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(4)
    procs = [
        ctx.Process(target=storage_workers.reopen_and_write, args=(str(path), w, 40, start))
        for w in range(3)
    ]
    procs.append(
        ctx.Process(target=storage_workers.compact_repeatedly, args=(str(path), 10, start))
    )
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    expected = sorted(["seed"] + [f"reopener {w} memory {i}" for w in range(3) for i in range(40)])
    assert sorted(m.content for m in JSONLStore(path, config=ALWAYS).list()) == expected
    assert sorted(m.content for m in JSONLStore(path).list()) == expected


def test_memory_columns_give_back_the_same_memories_exactly() -> None:
    odd = [
        Memory(
            id="m1",
            content="x",
            meta=MemoryMeta(tags=("a", "b"), source="s", context="c", extra={"k": [1]}),
            entities=("E",),
            created_at=5,
            last_used=6,
            use_count=2,
            strength=1.5,
            status=MemoryStatus.PROMOTED,
            promoted_at=7,
            promoted_to="vault/x.md",
            review_priority=0.25,
            last_review_at=8,
            review_count=3,
            cross_domain_count=1,
            unknown={"future_field": 1},
        ),
        Memory(id="m2", content="plain"),
    ]
    back = memories_from_columns(pickle.loads(pickle.dumps(memory_columns(odd), protocol=5)))
    assert back == odd
    assert [m.unknown for m in back] == [{"future_field": 1}, {}]  # not compared by ==
    assert back[0].meta.extra == {"k": [1]} and back[0].status is MemoryStatus.PROMOTED


def test_a_field_every_memory_holds_alike_is_kept_once_and_built_back_exactly() -> None:
    memories = [
        Memory(id=f"m{i}", content=f"x{i}", review_priority=-0.0 if i == 2 else 0.0)
        for i in range(4)
    ]
    columns = memory_columns(memories)
    assert columns["review_count"] == (0,) and columns["meta.source"] == (None,)
    assert columns["unknown"] == ({},)
    assert type(columns["review_priority"]) is list  # 0.0 and -0.0: equal, not the same
    back = memories_from_columns(pickle.loads(pickle.dumps(columns, protocol=5)))
    assert back == memories
    assert [str(m.review_priority) for m in back] == ["0.0", "0.0", "-0.0", "0.0"]
    assert len({id(m.unknown) for m in back}) == 4  # a dict each, as a save makes them
    columns["unknown"] = ({"planted": 1},)
    with pytest.raises(TypeError):
        memories_from_columns(columns)


@pytest.mark.parametrize(
    "damage", ["a column missing", "a short column", "an id not indexed", "an id twice"]
)
def test_snapshot_whose_memories_disagree_with_its_index_is_not_used(
    built, json_loads, damage: str
) -> None:
    path, saved = built
    data = (path / "memories.jsonl").read_bytes()
    rules = repr(ALWAYS.record_limits())
    (columns, slot_ids, text), _ = read_snapshot(path, data, rules)
    if damage == "a column missing":
        del columns["meta.context"]
    elif damage == "a short column":
        columns["content"].pop()  # (strength: all 1.0 here, kept as one value)
    elif damage == "an id twice":  # in both lists alike: the quick check of equal lists
        assert slot_ids[: len(columns["id"])] == columns["id"]
        columns["id"][3] = slot_ids[3] = columns["id"][4]
    else:
        columns["id"][3] = "not-in-the-text-index"
    write_snapshot(path, data, (columns, slot_ids, text), rules)  # valid checksum, wrong shape
    store = JSONLStore(path, config=ALWAYS)
    assert json_loads == [len(saved)]
    assert sorted(m.id for m in store.list()) == sorted(m.id for m in saved)


def test_text_index_with_free_slots_survives_a_snapshot() -> None:
    index = TextIndex()
    index.add_many([(f"d{i}", f"word{i} kayak", None) for i in range(10)])
    index.remove("d3")
    index.remove("d7")
    index.add("d10", "word10 canoe")  # takes a freed slot
    back = pickle.loads(pickle.dumps(index, protocol=5))
    kept = {f"d{i}" for i in range(11)} - {"d3", "d7"}
    assert set(back.doc_ids()) == set(index.doc_ids()) == kept
    assert back.top("kayak", 20) == index.top("kayak", 20)
    assert list(back.top("canoe", 5)) == list(index.top("canoe", 5)) == ["d10"]
    back.add("d11", "kayak again")  # the free slots still work after the round trip
    assert "d11" in back and len(back) == len(index) + 1


@pytest.mark.parametrize("source", ["jsonl", "snapshot"])
def test_an_opened_store_is_left_to_the_collectors_oldest_generation(
    tmp_path: Path, source: str
) -> None:
    # A store's view lives as long as the store: left in the youngest generation, the first
    # allocations after the load set off collector passes over all of it (0.17 + 0.11 CPU s
    # at 100k memories), only to move it on.
    import gc

    writer = JSONLStore(tmp_path, config=ALWAYS)
    for i in range(20):
        writer.save(f"note {i} about kayak trips", now=NOW)
    if source == "snapshot":
        JSONLStore(tmp_path, config=ALWAYS)  # a cold open writes the snapshot
    gc.collect()
    store = JSONLStore(tmp_path, config=ALWAYS)
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    memories = store.list()
    assert memories and all(id(m) in oldest for m in memories)


def test_overlay_documents_unpickle_without_counters_and_still_score_and_leave() -> None:
    # A Counter unpickles through its Python __init__ (a fifth of a 10k snapshot's load);
    # the overlay's terms go as plain dicts and are read back as such.
    index = TextIndex()
    index.add_many([(f"d{i}", f"word{i} kayak", None) for i in range(10)])
    index.add("d10", "kayak canoe canoe")  # the overlay, beside the bulk-built segment
    index.add("d11", "canoe paddle")
    blob = pickle.dumps(index, protocol=5)
    assert b"Counter" not in blob
    back = pickle.loads(blob)
    assert back.top("canoe kayak", 20) == index.top("canoe kayak", 20)
    back.remove("d10")  # an overlay document leaves by its terms
    index.remove("d10")
    assert back.top("canoe kayak", 20) == index.top("canoe kayak", 20)
    assert back.size_estimate() == index.size_estimate()


def test_equal_entity_lists_reopen_as_one_object(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path, config=ALWAYS)
    saved = [
        store.save(f"note {i} about a kayak", entities=["Kayak", "Lake"], now=NOW) for i in range(4)
    ]
    JSONLStore(tmp_path, config=ALWAYS)  # writes the snapshot
    again = JSONLStore(tmp_path, config=ALWAYS)
    first, *rest = (again.get(m.id) for m in saved)
    assert first.entities == ("Kayak", "Lake")
    assert all(m.entities is first.entities for m in rest)
    assert again.get(saved[1].id) == store.get(saved[1].id)


def test_memory_ids_inside_extras_reopen_as_the_ids_own_strings(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path, config=ALWAYS)
    a, b, c = (store.save(f"note {i} about a kayak", now=NOW) for i in range(3))
    merge = {"sources": [{"id": a.id, "status": "active"}, {"id": b.id, "status": "active"}]}
    store.update(a.id, extra={"merged_into": c.id})
    store.update(c.id, extra={"merge": merge, "deep": [[[[[[a.id]]]]]]})
    JSONLStore(tmp_path, config=ALWAYS)  # a cold open writes the snapshot
    again = JSONLStore(tmp_path, config=ALWAYS)
    ids = {m.id: m.id for m in again.list()}
    merged, kept = again.get(a.id), again.get(c.id)
    assert merged.meta.extra == {"merged_into": c.id} and kept == store.get(c.id)
    assert merged.meta.extra["merged_into"] is ids[c.id]
    sources = kept.meta.extra["merge"]["sources"]
    assert [s["id"] for s in sources] == [a.id, b.id]
    assert all(s["id"] is ids[s["id"]] for s in sources)
    assert kept.meta.extra["deep"] == [[[[[[a.id]]]]]]  # deeper than shared: as it was
