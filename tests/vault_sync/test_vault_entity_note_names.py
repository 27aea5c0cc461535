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
