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


class _CountingFinder:
    """Finds nothing; remembers which texts it was handed."""

    method = "spacy"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def find(self, texts):
        self.texts.extend(texts)
        return [() for _ in texts]


def test_records_read_before_are_not_looked_at_again_but_a_changed_one_is():
    store = InMemoryStore()
    kept, edited = store.save("Alice in Paris.", now=NOW), store.save("Bob in Rome.", now=NOW)
    # Both unread; ``read`` says an earlier call found them read as these very records.
    read = {m.id: m for m in store.list()}
    edited = store.update(edited.id, content="Bob in Rome, again.")
    finder = _CountingFinder()
    memories = {m.id: m for m in store.list()}
    count, _ = find_entities(store, memories, finder, limit=10, dry_run=False, read=read)
    assert (count, finder.texts) == (1, [edited.content])
    assert FOUND_KEY not in store.get(kept.id).meta.extra
