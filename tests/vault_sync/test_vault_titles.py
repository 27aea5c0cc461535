"""Short note titles, the first sentence as alias, legacy names renamed with links updated, and
a Related list that later runs keep current without touching a person's text."""

from __future__ import annotations

from pathlib import Path

import pytest

from cortexgraph.agents.merge_ops import apply_plan, plan_merge
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.models import Memory
from cortexgraph.vault_sync import ObsidianNoteSink, parse_note_text, promote_memory
from cortexgraph.vault_sync.note_names import legacy_note_title, short_title
from cortexgraph.vault_sync.refresh import refresh_notes

NOW = 1_750_000_000.0
LONG = (
    "Backfill finished 24 monthly partitions, 1.8M invoices; reconciliation against the "
    "ledger found 3 mismatches, all from the March currency fix."
)


@pytest.mark.parametrize(
    ("content", "entities", "title"),
    [
        (LONG, (), "Backfill finished 24 monthly partitions"),
        (
            "We chose PostgreSQL 16 for the billing service because it gives us row-level security.",
            ("PostgreSQL",),
            "PostgreSQL 16 for billing service",
        ),
        (
            "Priya Raman is the tech lead of billing-service and the main reviewer of Sam's PRs.",
            ("Priya Raman",),
            "Priya Raman is tech lead",
        ),
        (
            "Team norm: PR descriptions follow the template with Why / What / How tested.",
            (),
            "Team norm PR descriptions follow template",
        ),
        ("Deploys happen on Tuesdays", (), "Deploys happen on Tuesdays"),
    ],
)
def test_short_title_is_a_few_meaningful_words(content, entities, title):
    memory = Memory(id="m1", content=content, entities=entities)
    assert short_title(memory) == title
    assert short_title(memory) == short_title(
        Memory(id="other", content=content, entities=entities)
    )


def test_titles_are_short_unique_in_the_folder_and_keep_the_sentence_as_alias(tmp_path):
    store, vault = InMemoryStore(), tmp_path / "vault"
    a = store.save(LONG, now=NOW)
    b = store.save(LONG.replace("3 mismatches", "no mismatches"), now=NOW)
    with ObsidianNoteSink(vault) as sink:
        pa = promote_memory(store, sink, a.id, now=NOW, force=True).path
        pb = promote_memory(store, sink, b.id, now=NOW, force=True).path
    assert pa == "cortexgraph/Backfill finished 24 monthly partitions.md"
    assert pb == "cortexgraph/Backfill finished 24 monthly partitions 2.md"
    meta = parse_note_text((vault / pa).read_text()).metadata
    assert meta["aliases"] == [
        "Backfill finished 24 monthly partitions, 1.8M invoices; "
        "reconciliation against the ledger found 3 mismatches, all from "
        "the March currency fix."
    ]
    # Stable across runs: promoting again finds the same note under the same name.
    with ObsidianNoteSink(vault) as sink:
        assert promote_memory(store, sink, a.id, now=NOW + 60, force=True).path == pa


def _legacy_promote(monkeypatch, store, sink, memory_id):
    """Promote the way notes were named before short titles."""
    import cortexgraph.vault_sync.note_names as note_names

    with monkeypatch.context() as m:
        m.setattr(note_names, "short_title", legacy_note_title)
        return promote_memory(store, sink, memory_id, now=NOW, force=True).path


def test_legacy_names_are_renamed_with_links_updated_and_edits_kept(tmp_path, monkeypatch):
    store, vault = InMemoryStore(), tmp_path / "vault"
    m = store.save(LONG, entities=["March"], now=NOW)
    with ObsidianNoteSink(vault) as sink:
        old = _legacy_promote(monkeypatch, store, sink, m.id)
    old_stem = Path(old).stem
    assert old_stem.endswith("…") or len(old_stem) > 60
    note = vault / old
    note.write_text(note.read_text() + "\nMy own remark: check the March fix again.\n")
    mine = vault / "Daily.md"
    mine.write_text(f"See [[{old_stem}]] and [[{old_stem}|the backfill]].\n")
    with ObsidianNoteSink(vault) as sink:
        report = refresh_notes(store, sink, now=NOW + 10)
    new = "cortexgraph/Backfill finished 24 monthly partitions.md"
    assert report.renamed == [(old, new)]
    assert not note.exists()
    text = (vault / new).read_text()
    assert "My own remark: check the March fix again." in text
    assert old_stem in parse_note_text(text).metadata["aliases"]
    assert mine.read_text() == (
        "See [[Backfill finished 24 monthly partitions]] and "
        "[[Backfill finished 24 monthly partitions|the backfill]].\n"
    )
    entity = (vault / "cortexgraph/entities/March.md").read_text()
    assert "[[Backfill finished 24 monthly partitions]]" in entity
    assert store.get(m.id).promoted_to == new
    # A second run changes nothing; a note a person renamed is never renamed back.
    with ObsidianNoteSink(vault) as sink:
        assert refresh_notes(store, sink, now=NOW + 20).renamed == []
    (vault / new).rename(vault / "cortexgraph/My backfill notes.md")
    with ObsidianNoteSink(vault) as sink:
        assert refresh_notes(store, sink, now=NOW + 30).renamed == []
    assert (vault / "cortexgraph/My backfill notes.md").exists()


def test_related_list_follows_new_relations_without_touching_a_persons_text(tmp_path):
    store, vault = InMemoryStore(), tmp_path / "vault"
    a = store.save("Invoices are stored in PostgreSQL 16", now=NOW)
    b = store.save("Ledger writes must be idempotent", now=NOW)
    with ObsidianNoteSink(vault) as sink:
        pa = promote_memory(store, sink, a.id, now=NOW, force=True).path
        pb = promote_memory(store, sink, b.id, now=NOW, force=True).path
    note = vault / pa
    assert "Ledger writes" not in note.read_text()
    # A later run finds a relation: the untouched note gets its Related list.
    store.add_relation(a.id, b.id, "supports", now=NOW)
    with ObsidianNoteSink(vault) as sink:
        assert refresh_notes(store, sink, now=NOW + 10).related_updated == 2  # both ends
    assert f"- [[{Path(pb).stem}]] (supports)" in note.read_text()
    # A person writes in the note; a later run finds another relation.
    edited = note.read_text().replace(
        "Invoices are stored in PostgreSQL 16",
        "Invoices are stored in PostgreSQL 16 (my words here)",
    )
    note.write_text(edited + "\nMy closing thought.\n")
    c = store.save("Invoices are numbered per tenant", now=NOW)
    with ObsidianNoteSink(vault) as sink:
        pc = promote_memory(store, sink, c.id, now=NOW, force=True).path
    store.add_relation(c.id, a.id, "related", now=NOW)
    with ObsidianNoteSink(vault) as sink:
        report = refresh_notes(store, sink, now=NOW + 20)
    assert report.related_updated >= 1
    text = note.read_text()
    assert f"- [[{Path(pb).stem}]] (supports)" in text and f"- [[{Path(pc).stem}]]" in text
    assert "(my words here)" in text and text.rstrip().endswith("My closing thought.")
    assert not list((vault / "cortexgraph").glob("*conflict*"))
    with ObsidianNoteSink(vault) as sink:  # nothing new: nothing written
        assert refresh_notes(store, sink, now=NOW + 30).related_updated == 0


def test_a_merged_notes_related_list_names_its_sources(tmp_path):
    store, vault = InMemoryStore(), tmp_path / "vault"
    a = store.save("Billing invoices are stored in PostgreSQL", now=NOW)
    b = store.save("The billing service keeps its invoices in PostgreSQL", now=NOW)
    plan = plan_merge([a, b], 0.9, NOW, 0.2, 0.8)
    apply_plan(store, plan, NOW, issue_id=None)
    with ObsidianNoteSink(vault) as sink:
        path = promote_memory(store, sink, plan.memory.id, now=NOW, force=True).path
    body = parse_note_text((vault / path).read_text()).body
    assert f"- merged from: Billing invoices are stored in PostgreSQL ({a.id[:8]})" in body
    assert f"({b.id[:8]})" in body
