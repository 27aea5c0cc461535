from __future__ import annotations

import pytest
from agents_helpers import NOW, add
from fakes import RecordingSink

from cortexgraph.agents.pipeline import AGENT_ORDER, Pipeline, run_agents, select_agents
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import MemoryStatus


def _seed(store):
    add(store, "The ledger uses PostgreSQL 16.", entities=["ledger", "PostgreSQL"])
    add(store, "the ledger uses postgresql 16!", entities=["ledger", "PostgreSQL"], use_count=1)
    add(store, "Core: we deploy on Tuesdays.", use_count=3, strength=1.5)
    add(store, "forgotten thing", age_days=60)
    add(store, "Alice runs the ledger on PostgreSQL", entities=["ledger", "postgresql", "Alice"])


def test_plain_python_pipeline_runs_all_agents_in_order(store, tracker, embedder):
    _seed(store)
    seen = []
    report = run_agents(
        Pipeline(store, embedder=embedder, sink=RecordingSink(), tracker=tracker),
        now=NOW,
        on_step=lambda name, rep, s: seen.append(name),
    )
    assert seen == list(AGENT_ORDER) == list(report.agents)
    assert report.reports["merge"].count("merged") == 1
    assert len(report.reports["promote"].promotions) == 1
    # the merged memory carries both entities, and relates to Alice's memory
    merged_id = report.reports["merge"].outcomes[0].merged_id
    assert store.get(merged_id).status is MemoryStatus.ACTIVE
    assert any(merged_id in (d.from_id, d.to_id) for d in report.reports["relations"].discovered)
    md = report.to_markdown()
    assert all(t in md for t in ("Decay analysis", "Clusters", "Semantic merge", "Relationships"))
    assert report.to_json()["reports"]["cluster"]["clusters"][0]["action"] == "merge"


def test_dry_run_pipeline_previews_merges_and_writes_nothing(store, tracker, embedder):
    _seed(store)
    before = (store.list(), store.relations())
    sink = RecordingSink()
    report = run_agents(
        Pipeline(store, embedder=embedder, sink=sink, tracker=tracker), now=NOW, dry_run=True
    )
    assert report.reports["merge"].count("previewed") == 1
    assert (store.list(), store.relations()) == before
    assert tracker.query() == [] and sink.calls == []


def test_select_agents():
    assert select_agents(["relations", "DECAY"]) == ("decay", "relations")
    with pytest.raises(InvalidInputError):
        select_agents(["nope"])


def test_agents_run_with_the_store_frozen_out_of_gc_and_hand_it_back(store, tracker, embedder):
    import gc

    _seed(store)
    during = []

    class Watching(RecordingSink):
        def write_note(self, *args, **kwargs):
            during.append(gc.get_freeze_count())
            return super().write_note(*args, **kwargs)

    assert gc.get_freeze_count() == 0
    run_agents(Pipeline(store, embedder=embedder, sink=Watching(), tracker=tracker), now=NOW)
    assert during and all(n > 0 for n in during)  # the store's objects were left out
    assert gc.get_freeze_count() == 0  # and handed back for the next collection
