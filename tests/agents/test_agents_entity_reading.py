"""find_entities with a limit reads the newest memories: within one second (created_at's unit),
the later saves, the same in every run."""

from __future__ import annotations

from agents_helpers import NOW

from cortexgraph.activation.entity_batch import BatchEntityFinder
from cortexgraph.agents.entity_reading import FOUND_KEY, find_entities
from cortexgraph.storage import InMemoryStore


def test_a_limited_run_reads_a_bursts_later_saves():
    # The random ids decided which of a burst of one second's saves a limited run read.
    for _ in range(20):
        store = InMemoryStore()
        saved = [store.save(f"Alice met Bob in Paris, visit {i}.", now=NOW) for i in range(5)]
        memories = {m.id: m for m in store.list()}
        read, _method = find_entities(
            store, memories, BatchEntityFinder(None), limit=2, dry_run=False
        )
        assert read == 2
        assert {m.id for m in store.list() if FOUND_KEY in m.meta.extra} == {
            saved[-1].id,
            saved[-2].id,
        }
