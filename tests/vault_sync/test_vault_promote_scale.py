"""Promotion at scale: one vault walk per sink, a journaled ledger, and the same guarantees."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import ObsidianNoteSink, parse_note_text, promote_memory
from cortexgraph.vault_sync import note_locator as locator_module
from cortexgraph.vault_sync.ledger import JOURNAL_FILE, LEDGER_FILE, STATE_DIR, WriteLedger

NOW = 1_750_000_000.0


def _person_notes(vault: Path, n: int) -> None:
    for i in range(n):
        folder = vault / f"area{i % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note {i}.md").write_text(f"---\ntitle: note {i}\n---\n# note {i}\n\nText.\n")


def _spy_reads(monkeypatch) -> list[Path]:
    reads: list[Path] = []
    real = locator_module.read_head

    def spy(path: Path) -> bytes | None:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(locator_module, "read_head", spy)
    return reads


def test_many_promotions_walk_the_vault_once(store: InMemoryStore, vault: Path, monkeypatch):
    _person_notes(vault, 40)
    reads = _spy_reads(monkeypatch)
    sink = ObsidianNoteSink(vault, "cortexgraph")
    ids = [store.save(f"fact number {i}", now=NOW - 86400).id for i in range(25)]
    for mid in ids:
        promote_memory(store, sink, mid, now=NOW, force=True)
    for mid in ids:  # the update pass finds every note through the ledger
        assert not promote_memory(store, sink, mid, now=NOW + 60, force=True).created
    sink.close()
    assert sink.locator.walks == 1
    assert len(reads) == 40  # each of the person's notes was looked at once, ours never
    assert len(list((vault / "cortexgraph").glob("*.md"))) == 25


def test_ledger_is_journaled_and_folded_on_close(store: InMemoryStore, vault: Path) -> None:
    sink = ObsidianNoteSink(vault, "cortexgraph")
    ids = [store.save(f"fact {i}", now=NOW - 86400).id for i in range(3)]
    for mid in ids:
        promote_memory(store, sink, mid, now=NOW, force=True)
    state = vault / STATE_DIR
    assert not (state / LEDGER_FILE).exists()  # no whole-ledger rewrite per note
    assert len((state / JOURNAL_FILE).read_text().splitlines()) == 3
    # A sink that was never closed (a crash) loses nothing: the next one reads the journal.
    assert set(WriteLedger(vault).entries) == set(ids)
    sink.close()
    snapshot = json.loads((state / LEDGER_FILE).read_text())
    assert set(snapshot["notes"]) == set(ids)
    assert (state / JOURNAL_FILE).read_text() == ""
    assert set(WriteLedger(vault).entries) == set(ids)


def test_torn_journal_line_is_ignored(vault: Path, store: InMemoryStore) -> None:
    with ObsidianNoteSink(vault) as sink:
        m = store.save("kept", now=NOW - 86400)
        promote_memory(store, sink, m.id, now=NOW, force=True)
    journal = vault / STATE_DIR / JOURNAL_FILE
    journal.write_text('{"id": "x", "path": "a.md"}\n{"id": "half", "pa')
    ledger = WriteLedger(vault)
    assert m.id in ledger.entries and "half" not in ledger.entries


def test_a_second_process_sees_the_first_ones_notes(store: InMemoryStore, vault: Path) -> None:
    """Two sinks on one vault (as the MCP server and a CLI run): no duplicate note, and the
    second one's update reaches the note the first one wrote and then the person moved."""
    first, second = ObsidianNoteSink(vault), ObsidianNoteSink(vault)
    m = store.save("Deploys happen on Tuesdays", now=NOW - 86400)
    promote_memory(store, second, store.save("warm up", now=NOW - 86400).id, now=NOW, force=True)
    rel = first.write_note(store.get(m.id), now=NOW).path  # store not told: no promoted_to hint
    moved = vault / "Ops" / "deploy days.md"
    moved.parent.mkdir()
    (vault / rel).rename(moved)
    out = second.write_note(store.get(m.id), now=NOW + 5)
    assert out.path == "Ops/deploy days.md" and not out.created
    assert [p.name for p in vault.rglob("*Tuesdays*.md")] == []


def test_a_note_dropped_in_later_is_found_once_the_map_is_old(
    store: InMemoryStore, vault: Path
) -> None:
    sink = ObsidianNoteSink(vault)
    promote_memory(store, sink, store.save("first", now=NOW - 86400).id, now=NOW, force=True)
    m = store.save("Restored from the trash", now=NOW - 86400)
    other = ObsidianNoteSink(vault)
    rel = other.write_note(m, now=NOW).path
    (vault / STATE_DIR / JOURNAL_FILE).unlink()  # as if it came from a 1.x vault: no ledger
    sink.locator.max_age = 0.0
    out = sink.write_note(m, now=NOW + 1)
    assert out.path == rel and not out.created


def test_lost_ledger_never_clobbers_an_edit_and_never_blocks_an_unchanged_note(
    store: InMemoryStore, vault: Path
) -> None:
    m = store.save("The cache TTL is five minutes", now=NOW - 86400)
    with ObsidianNoteSink(vault) as sink:
        rel = promote_memory(store, sink, m.id, now=NOW, force=True).path
    edited = store.save("Queues are drained nightly", now=NOW - 86400)
    with ObsidianNoteSink(vault) as sink:
        edited_rel = promote_memory(store, sink, edited.id, now=NOW, force=True).path
    path = vault / edited_rel
    path.write_text(path.read_text() + "\nMy own remark.\n")
    for name in (LEDGER_FILE, JOURNAL_FILE):
        (vault / STATE_DIR / name).unlink(missing_ok=True)

    store.update(m.id, use_count=4)  # frontmatter only: the body we would write is the same
    store.update(edited.id, use_count=4)
    with ObsidianNoteSink(vault) as sink:
        same = promote_memory(store, sink, m.id, now=NOW + 10, force=True)
        kept = promote_memory(store, sink, edited.id, now=NOW + 10, force=True)
    assert same.path == rel and same.conflict_path is None
    assert parse_note_text((vault / rel).read_text()).metadata["use_count"] == 4
    assert kept.path == edited_rel
    assert "My own remark." in path.read_text()  # treated as the person's: body left alone
    assert parse_note_text(path.read_text()).metadata["use_count"] == 4


def test_the_next_process_reads_no_note_the_last_walk_read(
    store: InMemoryStore, vault: Path, monkeypatch
) -> None:
    """The locator's map outlives its sink: a new sink (the next consolidation run) stats the
    vault's notes but reads none of those the last walk read or its sink wrote."""
    _person_notes(vault, 40)
    reads = _spy_reads(monkeypatch)
    with ObsidianNoteSink(vault, "cortexgraph") as first:
        promote_memory(
            store, first, store.save("first fact", now=NOW - 86400).id, now=NOW, force=True
        )
    assert len(reads) == 40
    reads.clear()
    with ObsidianNoteSink(vault, "cortexgraph") as second:
        m = store.save("second fact", now=NOW - 86400)
        assert promote_memory(store, second, m.id, now=NOW, force=True).created
    assert second.locator.walks == 0 and second.locator.catch_ups == 1 and reads == []


def test_the_kept_map_reads_again_what_changed_since(
    store: InMemoryStore, vault: Path, monkeypatch
) -> None:
    """A note added, edited, moved or removed since the map was kept is read again (its stat
    key differs or its path is new): the note carrying an id is still found, no duplicate made."""
    _person_notes(vault, 10)
    moved_m = store.save("Deploys happen on Tuesdays", now=NOW - 86400)
    edited_m = store.save("The cache TTL is five minutes", now=NOW - 86400)
    with ObsidianNoteSink(vault, "cortexgraph") as sink:
        moved_rel = sink.write_note(moved_m, now=NOW).path
        edited_rel = sink.write_note(edited_m, now=NOW).path
    assert (vault / STATE_DIR / "note-ids.json").exists()
    # The person moves one note, copies the other's text into one of their own notes (and
    # deletes ours), drops one of theirs and adds one; the write ledger is lost.
    (vault / "Ops").mkdir()
    (vault / moved_rel).rename(vault / "Ops" / "deploys.md")
    (vault / "area0" / "note 0.md").write_text((vault / edited_rel).read_text())
    (vault / edited_rel).unlink()
    (vault / "area1" / "note 1.md").unlink()
    (vault / "area2" / "new.md").write_text("---\ntitle: new\n---\nText.\n")
    for name in (LEDGER_FILE, JOURNAL_FILE):
        (vault / STATE_DIR / name).unlink(missing_ok=True)
    reads = _spy_reads(monkeypatch)
    with ObsidianNoteSink(vault, "cortexgraph") as sink:
        assert sink.find_note(moved_m.id) == vault / "Ops" / "deploys.md"
        assert sink.find_note(edited_m.id) == vault / "area0" / "note 0.md"
        out = sink.write_note(store.get(moved_m.id), now=NOW + 5)
    assert out.path == "Ops/deploys.md" and not out.created
    assert sorted(p.name for p in reads) == ["deploys.md", "new.md", "note 0.md"]


def test_an_unreadable_map_costs_a_full_read_not_a_wrong_answer(
    store: InMemoryStore, vault: Path
) -> None:
    m = store.save("Backups run at midnight", now=NOW - 86400)
    with ObsidianNoteSink(vault, "cortexgraph") as sink:
        rel = sink.write_note(m, now=NOW).path
    (vault / STATE_DIR / "note-ids.json").write_text('{"version": 1, "notes": {"x": [1]}')
    (vault / STATE_DIR / LEDGER_FILE).unlink(missing_ok=True)
    (vault / STATE_DIR / JOURNAL_FILE).unlink(missing_ok=True)
    with ObsidianNoteSink(vault, "cortexgraph") as sink:
        assert sink.find_note(m.id) == vault / rel
        assert sink.locator.reads == 1


def _age(vault: Path, *, keep: Path) -> None:
    """Every folder and file an hour old (as a vault left alone since the last run), but
    ``keep``, which stays as recent as the walk that is about to record it."""
    then = time.time_ns() - 3600 * 10**9
    for path in [vault, *vault.rglob("*")]:
        if STATE_DIR not in path.parts and path != keep:
            os.utime(path, ns=(then, then))


def test_a_new_process_lists_only_the_folders_changed_since_the_kept_map(
    store: InMemoryStore, vault: Path, monkeypatch
) -> None:
    """The next run's first promotion stats the vault's folders, not its notes: a folder whose
    key is the one the map holds is taken as it was; one a person renamed, moved or deleted a
    note in, or one changed within the clock's reach of the last walk, is listed again. No
    note is lost and none is written twice."""
    _person_notes(vault, 40)
    renamed_m, moved_m, deleted_m, dropped_m = (
        store.save(text, now=NOW - 86400)
        for text in (
            "Deploys happen on Tuesdays",
            "The cache TTL is five minutes",
            "Backups run at midnight",
            "Queues drain nightly",
        )
    )
    with ObsidianNoteSink(vault, "cortexgraph") as sink:
        rels = {m.id: sink.write_note(m, now=NOW).path for m in (renamed_m, moved_m, deleted_m)}
    racy = vault / "area1"
    _age(vault, keep=racy)
    with ObsidianNoteSink(vault, "cortexgraph") as sink:
        assert sink.find_note("no such memory") is None  # the map now holds the aged folders
    # Between runs: a note of a memory written into area1 (another process) in the same clock
    # tick as the walk that kept area1's key; a note renamed in place, one moved into a new
    # folder, one deleted.
    dropped = ObsidianNoteSink(vault, "area1").write_note(dropped_m, now=NOW).path
    kept = json.loads((vault / STATE_DIR / "note-ids.json").read_text())["dirs"]["area1"]
    os.utime(racy, ns=(kept[0], kept[0]))
    (vault / rels[renamed_m.id]).rename(vault / "cortexgraph" / "Tuesdays.md")
    (vault / "Ops").mkdir()
    (vault / rels[moved_m.id]).rename(vault / "Ops" / "cache.md")
    (vault / rels[deleted_m.id]).unlink()
    for name in (LEDGER_FILE, JOURNAL_FILE):  # the locator alone knows where notes went
        (vault / STATE_DIR / name).unlink(missing_ok=True)

    stated: list[str] = []
    real = locator_module._stat_key
    monkeypatch.setattr(locator_module, "_stat_key", lambda p: stated.append(str(p)) or real(p))
    reads = _spy_reads(monkeypatch)
    with ObsidianNoteSink(vault, "cortexgraph") as sink:
        assert sink.find_note(renamed_m.id) == vault / "cortexgraph" / "Tuesdays.md"
        assert sink.find_note(moved_m.id) == vault / "Ops" / "cache.md"
        assert sink.find_note(dropped_m.id) == vault / dropped
        updated = sink.write_note(store.get(renamed_m.id), now=NOW + 5)
        assert sink.locator.walks == 0 and sink.locator.catch_ups == 1
        assert sorted(p.name for p in reads) == sorted(
            ["Tuesdays.md", "cache.md", Path(dropped).name]
        )
        assert not [p for p in stated if "/area0/" in p or "/area2/" in p or "/area3/" in p]
        # A note the map had and the catch-up did not find may have been edited in place
        # elsewhere: that costs a full walk, as every lookup did before.
        assert sink.find_note(deleted_m.id) is None
        assert sink.locator.walks == 1
        again = sink.write_note(store.get(deleted_m.id), now=NOW + 5)
    assert again.created and not updated.created and updated.path == "cortexgraph/Tuesdays.md"
    notes = [p for p in vault.rglob("*.md") if STATE_DIR not in p.parts]
    assert len(notes) == 40 + 3 + 1  # the person's, ours (one new), the dropped one


def test_an_id_pasted_into_a_note_where_no_folder_changed_is_found_by_a_full_walk(
    store: InMemoryStore, vault: Path
) -> None:
    """A person pastes our note's frontmatter into one of their notes (written in place: its
    folder's key does not change) and deletes ours: the catch-up misses the id the map had,
    so the vault is walked in full and the note found there, not written twice."""
    _person_notes(vault, 4)
    m = store.save("alpha fact", now=NOW - 86400)
    with ObsidianNoteSink(vault, "cortexgraph") as sink:
        rel = sink.write_note(m, now=NOW).path
    _age(vault, keep=vault / "nothing")
    with ObsidianNoteSink(vault, "cortexgraph") as sink:
        assert sink.find_note("no such memory") is None
    theirs = vault / "area0" / "note 0.md"
    theirs.write_text((vault / rel).read_text())
    (vault / rel).unlink()
    for name in (LEDGER_FILE, JOURNAL_FILE):
        (vault / STATE_DIR / name).unlink(missing_ok=True)
    with ObsidianNoteSink(vault, "cortexgraph") as sink:
        assert sink.find_note(m.id) == theirs
        assert (sink.locator.catch_ups, sink.locator.walks) == (1, 1)
        assert not sink.write_note(m, now=NOW + 5).created


@pytest.mark.parametrize("batch", [True, False], ids=["batch", "interactive"])
def test_the_next_process_reads_no_entity_note_the_last_sink_wrote(
    store: InMemoryStore, vault: Path, monkeypatch, batch: bool
) -> None:
    """Entity notes are written after the notes that name them (a batch sink: at its flush):
    the map the sink leaves knows them, so the next run's catch-up lists their folder but
    reads none of them (it read every one, each run after new entities were written)."""
    reads = _spy_reads(monkeypatch)
    with ObsidianNoteSink(vault, "cortexgraph", batch=batch) as first:
        for i, names in enumerate([["Aisha", "Postgres"], ["Kafka", "Aisha"], ["Redis"]]):
            m = store.save(f"fact {i} about {' and '.join(names)}", entities=names, now=NOW)
            promote_memory(store, first, m.id, now=NOW, force=True)
    entities = sorted(p.name for p in (vault / "cortexgraph" / "entities").glob("*.md"))
    assert entities == ["Aisha.md", "Kafka.md", "Postgres.md", "Redis.md"]
    reads.clear()
    with ObsidianNoteSink(vault, "cortexgraph", batch=batch) as second:
        m = store.save("second fact about Kafka", entities=["Kafka"], now=NOW)
        assert promote_memory(store, second, m.id, now=NOW, force=True).created
    assert second.locator.walks == 0 and second.locator.catch_ups == 1
    assert reads == []


def test_an_id_a_person_put_in_an_entity_note_is_still_found(
    store: InMemoryStore, vault: Path
) -> None:
    """An entity note carrying a memory's id (a person moved that note's frontmatter there) is
    not taken as a note without one when cortexgraph rewrites its list."""
    with ObsidianNoteSink(vault, "cortexgraph") as first:
        a = store.save("Kafka carries the billing events", entities=["Kafka"], now=NOW)
        promote_memory(store, first, a.id, now=NOW, force=True)
    note = next((vault / "cortexgraph").glob("*.md"))
    entity = vault / "cortexgraph" / "entities" / "Kafka.md"
    text = entity.read_text().replace("---\n", f"---\nid: {a.id}\n", 1)
    entity.write_text(text)
    note.unlink()  # the person's edit: the memory's note is now the entity note
    with ObsidianNoteSink(vault, "cortexgraph") as second:
        b = store.save("Kafka also carries audit events", entities=["Kafka"], now=NOW)
        promote_memory(store, second, b.id, now=NOW, force=True)  # rewrites Kafka.md's list
    with ObsidianNoteSink(vault, "cortexgraph") as third:  # a lookup as the promoter makes one
        assert third.locator.find(a.id) == entity
        assert third.find_note(a.id) == entity
