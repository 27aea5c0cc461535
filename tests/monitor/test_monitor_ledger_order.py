"""Moving the monitor's records keeps their relations in the order they were saved."""

from __future__ import annotations

from cortexgraph.activation.monitor.ledger_store import TAG, move_monitor_records
from cortexgraph.storage import open_store
from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.models import Memory, MemoryMeta, Relation


def test_relations_of_one_second_move_in_save_order_not_by_id(tmp_path):
    user = open_store(tmp_path / "user", StoreConfig())
    ledger = open_store(tmp_path / "ledger", StoreConfig())
    meta = MemoryMeta(tags=[TAG], source=TAG)
    user.put_many(
        [Memory(id=f"bm.{k}", content=f"loop {k}", meta=meta, created_at=100) for k in "abc"]
    )
    # Saved in the reverse of their ids' order, all within one second.
    saved = ["rel-z", "rel-m", "rel-a"]
    for rid, (a, b) in zip(saved, [("a", "b"), ("b", "c"), ("a", "c")], strict=True):
        user.put_relation(Relation(rid, f"bm.{a}", f"bm.{b}", created_at=200))
    assert [r.id for r in user.relations()] == saved

    report = move_monitor_records(user, ledger)

    assert report.relations_moved == 3
    assert [r.id for r in ledger.relations()] == saved
    assert user.relations() == []
