"""An export lists a burst of one second's saves (created_at's unit) in save order, and an
import of it keeps that order: the random ids no longer decide which save is the later."""

from __future__ import annotations

from cortexgraph.storage import open_store
from cortexgraph.storage.portable import collect_bundle, import_bundle

NOW = 1_750_000_000.0


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
