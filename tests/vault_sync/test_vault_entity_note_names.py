"""Entity notes as Obsidian resolves their names: one note per entity whatever its case, and
never a name a memory's note has (a ``[[name]]`` two notes share opens either one)."""

from __future__ import annotations

import collections
from pathlib import Path

from obsidiantools.api import Vault

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import ObsidianNoteSink, promote_memory

NOW = 1_750_000_000.0


def _promote(store: InMemoryStore, vault: Path, *memories: tuple[str, list[str]]) -> list[str]:
    """Save and promote each (content, entities) with a sink of its own (a process each); the
    stems of their notes."""
    stems = []
    for content, entities in memories:
        memory = store.save(content, entities=entities, now=NOW - 86400)
        with ObsidianNoteSink(vault, "cortexgraph") as sink:
            out = promote_memory(store, sink, memory.id, now=NOW, force=True)
        stems.append(Path(out.path).stem)
    return stems


def _names_shared_case_insensitively(vault: Path) -> list[str]:
    stems = collections.Counter(p.stem.lower() for p in vault.rglob("*.md"))
    return sorted(s for s, n in stems.items() if n > 1)


def test_an_entity_written_in_two_cases_has_one_note(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    store = InMemoryStore()
    fixtures, hermetic, cache, lead = _promote(
        store,
        vault,
        ("Sam prefers pytest fixtures over unittest classes", ["Sam"]),
        ("Keep billing tests hermetic, sam asked for testcontainers", ["sam"]),
        ("Redis is the session cache of the billing service", ["Redis", "redis"]),
        ("SAM got the billing tech lead role for the winter", ["SAM"]),
    )

    entities = sorted(p.name for p in (vault / "cortexgraph" / "entities").iterdir())
    # On macOS and Windows "Sam.md" and "sam.md" are one file: a vault synced there from
    # Linux got a sync conflict, and Obsidian on Linux drew two nodes for one person.
    assert entities == ["Redis.md", "Sam.md"]
    assert _names_shared_case_insensitively(vault) == []
    ot = Vault(vault).connect().gather()
    assert ot.nonexistent_notes == []
    assert sorted(ot.get_wikilinks("Sam")) == sorted([fixtures, hermetic, lead])
    assert ot.get_wikilinks("Redis") == [cache]
    # The note naming both spellings links the entity once, as its Related list shows it.
    assert ot.get_wikilinks(cache) == ["Redis"]
    assert ot.get_wikilinks(hermetic) == ["Sam"]


def _self_links(ot: Vault) -> list[str]:
    return sorted(n for n, links in ot.wikilinks_index.items() if n in links)


def test_a_memorys_note_and_an_entity_note_never_share_a_name(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    store = InMemoryStore()
    postgres, kafka_events, kafka, redis, redis_cache = _promote(
        store,
        vault,
        # titled as its own entity: its Related link and the entity's list opened themselves
        ("PostgreSQL", ["PostgreSQL"]),
        ("Kafka carries the billing events to the ledger", ["Kafka"]),
        ("Kafka", []),  # titled as an entity note that exists
        ("Redis", []),  # a note an entity note is later named after
        ("Redis is the session cache of the billing service", ["Redis"]),
    )

    # Obsidian opens a [[name]] two notes share in the linking note's own folder first: the
    # memory note "PostgreSQL" linked itself, and so did the entity note's "Mentioned in".
    assert _names_shared_case_insensitively(vault) == []
    ot = Vault(vault).connect().gather()
    assert ot.nonexistent_notes == []
    assert _self_links(ot) == []
    entity_of = {p.stem: p.stem for p in (vault / "cortexgraph" / "entities").glob("*.md")}
    postgres_entity = next(s for s in entity_of if s.startswith("PostgreSQL"))
    kafka_entity = next(s for s in entity_of if s.startswith("Kafka"))
    redis_entity = next(s for s in entity_of if s.startswith("Redis"))
    assert ot.get_wikilinks(postgres) == [postgres_entity]
    assert ot.get_wikilinks(postgres_entity) == [postgres]
    assert ot.get_wikilinks(kafka_entity) == [kafka_events]
    assert kafka not in ot.get_backlinks(kafka_entity)
    assert ot.get_wikilinks(redis_entity) == [redis_cache]
    assert ot.get_wikilinks(redis_cache) == [redis_entity]
    assert redis not in (postgres_entity, kafka_entity, redis_entity)
