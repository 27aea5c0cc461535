"""A name with a version after it is that name: the entity index finds "Postgres 16" for a
question that says "postgres", and its exact-name boost no longer lifts every memory with the
bare name above the one that answers (the demo's "why did we choose postgres for billing"
fell from first to third once a consolidation run had read "postgres" into the other Postgres
memories and "postgres 16" into this one). A year is a time, not a version."""

from __future__ import annotations

import pytest

from cortexgraph.storage.label_index import entity_keys


@pytest.mark.parametrize(
    ("entity", "keys"),
    [
        ("Postgres 16", ("postgres 16", "postgres")),
        ("Python 3.11", ("python 3.11", "python")),
        ("iOS v17", ("ios v17", "ios")),
        ("Caroline", ("caroline",)),
        ("Pride 2022", ("pride 2022",)),
        ("May 2023", ("may 2023",)),
        ("16", ("16",)),
        ("route 1 2", ("route 1 2", "route 1")),
    ],
)
def test_a_versioned_name_is_also_indexed_as_the_name(entity, keys):
    assert entity_keys(entity) == keys


def test_the_index_keeps_the_versions_name_in_step_with_the_memory(store, now):
    picked = store.save("We picked Postgres 16 for billing.", entities=["Postgres 16"], now=now)
    old = store.save("The till database runs Postgres.", entities=["Postgres"], now=now)
    assert store.ids_with_entity("postgres") == {picked.id, old.id}
    assert store.ids_with_entity("postgres 16") == {picked.id}
    store.update(picked.id, entities=["Redis 7"])
    assert store.ids_with_entity("postgres") == {old.id}
    assert store.ids_with_entity("redis") == {picked.id}
    store.delete(old.id)
    assert store.ids_with_entity("postgres") == set()


def test_a_question_naming_the_software_finds_its_versioned_memory_first(store, now):
    answer = store.save(
        "We picked Postgres 16 for billing-service, the deciding reason being row-level "
        "security for tenant isolation.",
        entities=["PostgreSQL", "billing-service", "postgres 16"],
        tags=["decision", "billing", "database"],
        now=now,
    )
    store.save(
        "The shared Postgres on the old 'till' database is version 11 and reaches end of "
        "support for RDS soon.",
        entities=["PostgreSQL", "till", "RDS", "postgres"],
        tags=["billing", "database", "legacy"],
        now=now,
    )
    store.save(
        "Sam asked: keep billing-service tests hermetic, use testcontainers for Postgres "
        "instead of the shared dev database.",
        entities=["Sam", "testcontainers", "PostgreSQL", "billing-service", "postgres"],
        tags=["preferences", "testing"],
        now=now,
    )
    [first, *_] = store.search("why did we choose postgres for billing", top_k=3, now=now)
    assert first.memory.id == answer.id
