"""Search prefers the current fact: superseded or deprecated memories rank below it."""

from __future__ import annotations

from cortexgraph.storage import InMemoryStore

NOW = 1_700_000_000


def test_a_query_matching_an_old_fact_finds_the_fact_that_replaced_it_first() -> None:
    store = InMemoryStore()
    old = store.save("Priya lives in Paris and works from the Paris office", now=NOW - 86_400)
    new = store.save("Priya moved to London; she works from the London office now", now=NOW)
    question = "does Priya live in Paris?"
    assert store.search(question, now=NOW, use_embeddings=False)[0].memory.id == old.id
    store.update(old.id, extra={"superseded_by": new.id, "valid_until": NOW})
    ranked = [r.memory.id for r in store.search(question, now=NOW, use_embeddings=False)]
    assert ranked[:2] == [new.id, old.id]


def test_a_deprecated_memory_ranks_last_among_matches() -> None:
    store = InMemoryStore()
    wrong = store.save("The staging database password rotates every week", now=NOW)
    right = store.save("Staging database credentials rotate monthly via Vault", now=NOW)
    store.update(wrong.id, extra={"deprecated": True})
    ranked = [
        r.memory.id for r in store.search("staging database rotate", now=NOW, use_embeddings=False)
    ]
    assert ranked == [right.id, wrong.id]
