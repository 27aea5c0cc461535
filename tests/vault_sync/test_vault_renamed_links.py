"""A note a person renamed in Obsidian keeps the links other notes have to it.

Obsidian renames a note and rewrites the [[links]] to it (its default). The next time
cortexgraph rewrote a related memory's note (a promotion after an update, a run's refresh),
its Related list looked for the renamed note only where the write ledger had it, found no file
there, and dropped the link that Obsidian had just repaired: the vault's graph lost the edge.
"""

from __future__ import annotations

from pathlib import Path

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import ObsidianNoteSink, promote_memory

NOW = 1_750_000_000.0


def _rename_in_obsidian(vault: Path, rel: str, new_stem: str) -> None:
    """What Obsidian does: the file renamed, every [[old]] in the vault made [[new]]."""
    old = vault / rel
    old.rename(old.with_name(f"{new_stem}.md"))
    for note in vault.rglob("*.md"):
        text = note.read_text("utf-8")
        if f"[[{old.stem}]]" in text:
            note.write_text(text.replace(f"[[{old.stem}]]", f"[[{new_stem}]]"), "utf-8")


def _promoted_pair(vault: Path) -> tuple[InMemoryStore, str, str, str]:
    store = InMemoryStore()
    trip = store.save("Lisbon trip booked for May", now=NOW - 86400)
    wine = store.save("Porto wine tasting on the second day", now=NOW - 86400)
    store.add_relation(wine.id, trip.id, "related", now=NOW - 86400)
    sink = ObsidianNoteSink(vault, "cortexgraph")
    trip_rel = promote_memory(store, sink, trip.id, now=NOW, force=True).path
    wine_rel = promote_memory(store, sink, wine.id, now=NOW, force=True).path
    assert "[[Lisbon trip booked for May]] (related)" in (vault / wine_rel).read_text()
    _rename_in_obsidian(vault, trip_rel, "My Lisbon")
    return store, trip.id, wine.id, wine_rel


def test_an_update_of_a_related_note_keeps_the_link_to_the_renamed_note(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    store, _, wine, wine_rel = _promoted_pair(vault)
    store.update(wine, content="Porto wine tasting on the third day")
    promote_memory(store, ObsidianNoteSink(vault, "cortexgraph"), wine, now=NOW + 60, force=True)
    text = (vault / wine_rel).read_text()
    assert "third day" in text
    assert "[[My Lisbon]] (related)" in text


def test_a_refresh_keeps_the_link_to_the_renamed_note(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    store, trip, wine, wine_rel = _promoted_pair(vault)
    sink = ObsidianNoteSink(vault, "cortexgraph")
    memory = store.get(wine)
    sink.refresh_note(
        memory, related=[store.get(trip)], relations=store.relations(wine), now=NOW + 60
    )
    assert "[[My Lisbon]] (related)" in (vault / wine_rel).read_text()
