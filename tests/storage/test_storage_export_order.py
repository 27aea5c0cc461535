"""An export lists a burst of one second's saves (created_at's unit) in save order, and an
import of it keeps that order: the random ids no longer decide which save is the later."""

from __future__ import annotations

from dataclasses import replace

from cortexgraph.storage import StoreConfig, open_store
from cortexgraph.storage.portable import collect_bundle, import_bundle

NOW = 1_750_000_000.0
SNAP = StoreConfig(snapshot_min_bytes=1)  # a reopen reads the relations' snapshot


def test_export_keeps_save_order_within_a_second_and_import_reproduces_it(tmp_path):
    for draw in range(8):
        store = open_store(tmp_path / f"a{draw}")
        earlier = [store.save(f"older burst item {i}", now=NOW - 60) for i in range(4)]
        burst = [store.save(f"burst item {i} of draw {draw}", now=NOW) for i in range(5)]
        saved = [m.id for m in earlier + burst]
        bundle = collect_bundle(store)
        assert [m["id"] for m in bundle.memories] == saved
        again = open_store(tmp_path / f"b{draw}")
        assert import_bundle(again, bundle).added["memories"] == len(saved)
        ranks = again.save_ranks(saved)
        assert sorted(saved, key=ranks.__getitem__) == saved


def _related(store, draw: int) -> tuple[list[str], list[str]]:
    """Memories a, b, c; one relation a minute earlier, then a burst of five in one second
    (a replace of the first of them in the same second keeps its place)."""
    a, b, c = (store.save(f"relation end {x} of draw {draw}", now=NOW - 120) for x in "abc")
    early = store.add_relation(a.id, c.id, "related", now=NOW - 60)
    pairs = [(a, b), (b, c), (a, c), (c, a), (b, a)]
    kinds = ["related", "supports", "causes", "contradicts", "related"]
    burst = [
        store.add_relation(x.id, y.id, kind, now=NOW)
        for kind, (x, y) in zip(kinds, pairs, strict=True)
    ]
    store.put_relation(replace(burst[0], strength=0.5))
    return [early.id, *(r.id for r in burst)], [a.id, b.id, c.id]


def test_relations_of_one_second_come_in_save_order_across_a_reopen(tmp_path):
    for draw in range(8):
        path = tmp_path / f"r{draw}"
        saved, (a_id, _, _) = _related(open_store(path, SNAP), draw)
        of_a = [i for i in saved if i != saved[2]]  # all but b -> c
        for store in (open_store(path, SNAP), open_store(path, SNAP)):  # the second: snapshot
            assert [r.id for r in store.relations()] == saved
            assert [r.id for r in store.relations(a_id)] == of_a
        store.compact()
        assert [r.id for r in open_store(path).relations()] == saved


def test_an_export_lists_relations_in_save_order_and_import_reproduces_it(tmp_path):
    for draw in range(8):
        store = open_store(tmp_path / f"a{draw}")
        saved, _ = _related(store, draw)
        bundle = collect_bundle(store)
        assert [r["id"] for r in bundle.relations] == saved
        again = open_store(tmp_path / f"b{draw}")
        report = import_bundle(again, bundle)
        assert report.added["relations"] == len(saved)
        assert [r["id"] for r in collect_bundle(open_store(again.path)).relations] == saved
