"""Unpromote takes out the links promotion made; `vault refresh` repairs links left broken.
Read back with obsidiantools (Obsidian's own link rules) and with `vault check`'s index."""

from __future__ import annotations

import os
from pathlib import Path

from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.vault_sync import LTMIndex, ObsidianNoteSink, promote_memory
from cortexgraph.vault_sync.refresh import refresh_notes
from cortexgraph.vault_sync.unpromote import unpromote_memory
from cortexgraph.vault_sync.vault_check import check_vault

NOW = 1_750_000_000.0
try:  # Obsidian's link rules as obsidiantools reads them (the `full` extra, in `dev`)
    from obsidiantools.api import Vault
except ImportError:  # else the vault's own link parser alone (what `vault check` uses)
    Vault = None


def _vault_with_three(vault: Path, store: InMemoryStore) -> list[str]:
    sink = ObsidianNoteSink(vault, "cortexgraph")
    a = store.save("We chose PostgreSQL for the ledger", entities=["PostgreSQL", "Ledger"], now=NOW)
    b = store.save("Ledger writes must be idempotent", entities=["Ledger"], now=NOW)
    c = store.save("PostgreSQL runs on version 16", entities=["PostgreSQL"], now=NOW)
    store.add_relation(a.id, b.id, "supports", now=NOW)
    store.add_relation(c.id, a.id, "related", now=NOW)
    for m in (a, b, c):
        promote_memory(store, sink, m.id, now=NOW, force=True)
    return [a.id, b.id, c.id]


def _broken(vault: Path) -> tuple[list[str], list[str]]:
    """Links that open no note: (obsidiantools' view, or [] without it; `vault check`'s)."""
    ours = [f"{i.path}: {i.detail}" for i in check_vault(LTMIndex.open(vault))]
    if Vault is None:
        return [], ours
    return sorted(Vault(vault).connect().gather().nonexistent_notes), ours


def _links(vault: Path, name: str) -> list[str]:
    """The wikilinks of the note called ``name``, read back from the files."""
    if Vault is not None:
        return list(Vault(vault).connect().gather().get_wikilinks(name))
    (record,) = [r for r in LTMIndex.open(vault).notes.values() if r.name == name]
    return list(record.wikilinks)


def test_two_unpromotes_leave_no_broken_link(tmp_path: Path) -> None:
    vault, store = tmp_path / "vault", InMemoryStore()
    a, b, _ = _vault_with_three(vault, store)
    entity = vault / "cortexgraph/entities/Ledger.md"
    entity.write_text(entity.read_text() + "\nMy own words about the ledger.\n")
    assert _broken(vault) == ([], [])

    for memory_id in (a, b):
        done = unpromote_memory(store, vault, memory_id, now=NOW + 60)
        assert done.trashed_to and done.links_removed > 0
        assert store.get(memory_id).status is MemoryStatus.ACTIVE

    assert _broken(vault) == ([], [])
    assert _links(vault, "PostgreSQL") == ["PostgreSQL runs on version 16"]
    assert _links(vault, "Ledger") == []  # its list is empty, the note and its text stay
    assert "My own words about the ledger." in entity.read_text()
    # c's Related list linked to a's note; it now links only to what is still in the vault
    assert _links(vault, "PostgreSQL runs on version 16") == ["PostgreSQL"]
    assert (vault / ".trash").is_dir() and len(list((vault / ".trash").glob("*.md"))) == 2


def test_refresh_repairs_links_an_older_unpromote_left_broken(tmp_path: Path) -> None:
    vault, store = tmp_path / "vault", InMemoryStore()
    a, b, _ = _vault_with_three(vault, store)
    # what unpromote did before: the note to .trash/, the memory back to active, links kept
    trash = vault / ".trash"
    trash.mkdir()
    for memory_id in (a, b):
        rel = store.get(memory_id).promoted_to
        assert rel is not None
        os.replace(vault / rel, trash / Path(rel).name)
        store.update(memory_id, status=MemoryStatus.ACTIVE, promoted_to=None, promoted_at=None)
    missing, ours = _broken(vault)
    assert len(ours) == 4 and len(missing) in (0 if Vault is None else 2,)  # 3 entity, 1 Related

    with ObsidianNoteSink(vault, "cortexgraph") as sink:
        report = refresh_notes(store, sink, now=NOW + 60)
    assert report.dead_mentions_removed == 3 and report.related_updated == 1
    assert "3 broken entity-note links removed" in report.summary()
    assert _broken(vault) == ([], [])
    assert _links(vault, "PostgreSQL") == ["PostgreSQL runs on version 16"]


def test_unpromote_after_a_person_deleted_or_renamed_the_note_leaves_no_broken_link(
    tmp_path: Path,
) -> None:
    """The entity notes still listed the name promotion gave the note: a note the person had
    deleted (nothing was trashed, so nothing was unlinked) or renamed outside Obsidian (the
    new name was unlinked, the old one stayed)."""
    vault, store = tmp_path / "vault", InMemoryStore()
    a, b, _ = _vault_with_three(vault, store)
    (vault / store.get(a).promoted_to).unlink()
    note_b = vault / store.get(b).promoted_to
    note_b.rename(note_b.with_name("Idempotent writes.md"))

    assert unpromote_memory(store, vault, a, now=NOW + 60).trashed_to is None
    assert unpromote_memory(store, vault, b, now=NOW + 60).trashed_to
    assert _broken(vault) == ([], [])
    assert _links(vault, "Ledger") == []
    assert _links(vault, "PostgreSQL") == ["PostgreSQL runs on version 16"]
