"""A pipeline's sink: entity notes written once per flush, new names picked without a listing
per note, and nothing of a person's overwritten on the way."""

from __future__ import annotations

from pathlib import Path

import cortexgraph.vault_sync.note_format as note_format_module
import cortexgraph.vault_sync.note_locator as note_locator_module
import cortexgraph.vault_sync.note_sink as note_sink_module
from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import ObsidianNoteSink, promote_memory

NOW = 1_750_000_000.0


def _store(texts: list[str]) -> tuple[InMemoryStore, list[str]]:
    store = InMemoryStore()
    ids = [store.save(t, entities=["PostgreSQL", "Sam"], now=NOW - 86400).id for t in texts]
    return store, ids


def _mentions(vault: Path, entity: str) -> list[str]:
    text = (vault / "cortexgraph" / "entities" / f"{entity}.md").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.startswith("- [[")]


def test_a_batch_sink_writes_entity_notes_once_at_close(tmp_path: Path) -> None:
    store, ids = _store([f"Sam moved ledger {i} to PostgreSQL." for i in range(5)])
    vault = tmp_path / "vault"
    with ObsidianNoteSink(vault, batch=True) as sink:
        for memory_id in ids:
            promote_memory(store, sink, memory_id, now=NOW, force=True)
        assert not (vault / "cortexgraph" / "entities" / "PostgreSQL.md").exists()
    assert len(_mentions(vault, "PostgreSQL")) == 5 == len(_mentions(vault, "Sam"))
    # a second run adds nothing twice
    with ObsidianNoteSink(vault, batch=True) as sink:
        for memory_id in ids:
            promote_memory(store, sink, memory_id, now=NOW + 60, force=True)
    assert len(_mentions(vault, "PostgreSQL")) == 5


def test_interactive_sink_writes_entity_notes_with_each_note(tmp_path: Path) -> None:
    store, ids = _store(["Sam chose PostgreSQL for billing."])
    sink = ObsidianNoteSink(tmp_path / "vault")  # never closed, as the MCP server keeps it
    promote_memory(store, sink, ids[0], now=NOW, force=True)
    assert len(_mentions(tmp_path / "vault", "PostgreSQL")) == 1


def test_new_names_list_the_folder_once_and_never_overwrite(tmp_path, monkeypatch) -> None:
    store, ids = _store(["Sam chose PostgreSQL for billing."] * 4)
    vault = tmp_path / "vault"
    (vault / "cortexgraph").mkdir(parents=True)
    listed: list[str] = []
    real_listdir = note_sink_module.os.listdir

    def counting_listdir(path):
        listed.append(str(path))
        return real_listdir(path)

    monkeypatch.setattr(note_sink_module.os, "listdir", counting_listdir)
    with ObsidianNoteSink(vault, batch=True) as sink:
        first = promote_memory(store, sink, ids[0], now=NOW, force=True)
        # another process writes the next free name after our listing
        taken = vault / Path(first.path).with_name(Path(first.path).stem + " 2.md")
        taken.write_text("a person's note\n", encoding="utf-8")
        rest = [promote_memory(store, sink, i, now=NOW, force=True) for i in ids[1:]]
    assert listed.count(str(vault / "cortexgraph")) == 1
    assert taken.read_text(encoding="utf-8") == "a person's note\n"
    paths = [first.path, *(r.path for r in rest)]
    assert len(set(paths)) == 4 and taken.name not in {Path(p).name for p in paths}


def test_a_batch_sink_holds_the_write_lock_only_until_it_flushes(tmp_path: Path) -> None:
    import pytest
    from filelock import FileLock, Timeout

    from cortexgraph.vault_sync.ledger import STATE_DIR

    store, ids = _store(["Sam chose PostgreSQL for billing."])
    vault = tmp_path / "vault"
    sink = ObsidianNoteSink(vault, batch=True)
    promote_memory(store, sink, ids[0], now=NOW, force=True)
    other = FileLock(str(vault / STATE_DIR / "write.lock"), timeout=0)
    with pytest.raises(Timeout):  # another writer waits while the batch runs
        other.acquire()
    sink.close()
    other.acquire()  # free again once flushed
    other.release()
    assert len(_mentions(vault, "PostgreSQL")) == 1


def test_a_batch_sink_folds_the_ledger_every_flush_every_notes_and_entities_once_a_run(
    tmp_path: Path, monkeypatch
) -> None:
    import json

    from cortexgraph.vault_sync.ledger import LEDGER_FILE, STATE_DIR

    monkeypatch.setattr(note_sink_module, "FLUSH_EVERY", 2)
    store, ids = _store([f"Sam moved ledger {i} to PostgreSQL." for i in range(5)])
    vault = tmp_path / "vault"
    sink = ObsidianNoteSink(vault, batch=True)
    for memory_id in ids:
        promote_memory(store, sink, memory_id, now=NOW, force=True)
    snapshot = json.loads((vault / STATE_DIR / LEDGER_FILE).read_text(encoding="utf-8"))
    assert len(snapshot["notes"]) == 4  # folded at the 2nd and 4th note
    assert not (vault / "cortexgraph" / "entities" / "PostgreSQL.md").exists()
    sink.flush()  # the run's end: each entity note once, with every link of the run
    assert len(_mentions(vault, "PostgreSQL")) == 5 == len(_mentions(vault, "Sam"))


def test_a_big_ledger_is_folded_when_its_journal_reaches_a_quarter_of_it(
    tmp_path: Path, monkeypatch
) -> None:
    from cortexgraph.vault_sync.ledger import WriteLedger

    monkeypatch.setattr(note_sink_module, "FLUSH_EVERY", 2)
    store, ids = _store([f"Sam moved ledger {i} to PostgreSQL." for i in range(12)])
    vault = tmp_path / "vault"
    with ObsidianNoteSink(vault, batch=True) as sink:
        for memory_id in ids[:8]:
            promote_memory(store, sink, memory_id, now=NOW, force=True)
    sink = ObsidianNoteSink(vault, batch=True)
    for memory_id in ids[8:10]:
        promote_memory(store, sink, memory_id, now=NOW, force=True)
    assert WriteLedger(vault).pending == 0  # 2 journal lines >= 10 entries // 4: folded
    for memory_id in ids[10:]:
        promote_memory(store, sink, memory_id, now=NOW, force=True)
    assert WriteLedger(vault).pending == 2  # 2 lines < 12 // 4: synced, left to the journal
    folded = (vault / ".cortexgraph" / "write-ledger.json").stat().st_mtime_ns
    sink.close()  # the run's end syncs the journal with the notes; no whole-ledger rewrite
    ledger = WriteLedger(vault)
    assert ledger.pending == 2 and len(ledger.entries) == 12
    assert (vault / ".cortexgraph" / "write-ledger.json").stat().st_mtime_ns == folded
    again = ObsidianNoteSink(vault, batch=True)  # the next run finds every note through it
    assert all(again.find_note(memory_id) is not None for memory_id in ids)
    assert again.locator.walks == again.locator.catch_ups == 0


def test_promoting_again_leaves_a_note_alone_when_only_its_date_would_change(
    tmp_path: Path,
) -> None:
    store, ids = _store(["Sam chose PostgreSQL for billing."])
    vault = tmp_path / "vault"
    for batch in (False, True):
        with ObsidianNoteSink(vault, batch=batch) as sink:
            first = promote_memory(store, sink, ids[0], now=NOW, force=True)
        note = vault / first.path
        before, stat = note.read_bytes(), note.stat()
        with ObsidianNoteSink(vault, batch=batch) as sink:
            again = promote_memory(store, sink, ids[0], now=NOW + 3600, force=True)
        assert again.path == first.path and not again.created
        assert note.read_bytes() == before and note.stat().st_mtime_ns == stat.st_mtime_ns
    store.update(ids[0], context="moved in Q3")  # a real change is written, dated
    with ObsidianNoteSink(vault, batch=True) as sink:
        promote_memory(store, sink, ids[0], now=NOW + 7200, force=True)
    text = note.read_text(encoding="utf-8")
    assert "moved in Q3" in text and "updated: '2025-06-15T17:06:40+00:00'" in text


def test_refreshing_right_after_promoting_reads_only_notes_whose_links_changed(
    tmp_path: Path, monkeypatch
) -> None:
    from cortexgraph.vault_sync.refresh import refresh_notes

    store, ids = _store(["Sam chose PostgreSQL for billing.", "Sam moved the ledger to Rust."])
    vault = tmp_path / "vault"
    parsed: list[str] = []
    real_parse = note_format_module.parse_note_text

    def counting_parse(text: str):
        parsed.append(text)
        return real_parse(text)

    # a note is parsed where it is read: finding it (note_locator) or rereading it to update
    # or refresh it (note_format.parse_note_file)
    for module in (note_format_module, note_locator_module):
        monkeypatch.setattr(module, "parse_note_text", counting_parse)
    with ObsidianNoteSink(vault, batch=True) as sink:
        paths = [promote_memory(store, sink, i, now=NOW, force=True).path for i in ids]
        report = refresh_notes(store, sink, now=NOW)  # what the pipeline does next
        assert report.checked == 2 and report.related_updated == 0 and parsed == []
        store.add_relation(ids[0], ids[1], "supports", now=NOW)  # found after the notes
        report = refresh_notes(store, sink, now=NOW)
    assert report.related_updated == 2 and len(parsed) == 2
    first = (vault / paths[0]).read_text(encoding="utf-8")
    assert f"[[{Path(paths[1]).stem}]] (supports)" in first


def test_promoting_again_parses_each_note_once_and_keeps_what_a_person_added(
    tmp_path: Path, monkeypatch
) -> None:
    store, ids = _store(["Sam chose PostgreSQL for billing.", "Sam moved the ledger to Rust."])
    vault = tmp_path / "vault"
    with ObsidianNoteSink(vault, batch=True) as sink:
        paths = [promote_memory(store, sink, i, now=NOW, force=True).path for i in ids]
    note = vault / paths[0]
    edited = note.read_text(encoding="utf-8").replace("---\n", "---\nrating: 5\n", 1)
    note.write_text(edited, encoding="utf-8")  # a key of the person's own, read by the update
    for memory_id in ids:
        store.update(memory_id, context="moved in Q3")  # a change each note must show
    parsed: list[str] = []
    real_parse = note_format_module.parse_note_text

    def counting_parse(text: str):
        parsed.append(text)
        return real_parse(text)

    for module in (note_format_module, note_locator_module):
        monkeypatch.setattr(module, "parse_note_text", counting_parse)
    with ObsidianNoteSink(vault, batch=True) as sink:
        again = [promote_memory(store, sink, i, now=NOW + 60, force=True) for i in ids]
    assert [a.path for a in again] == paths and not any(a.created for a in again)
    assert len(parsed) == 2  # found and updated from one read each
    text = note.read_text(encoding="utf-8")
    assert "rating: 5" in text and "moved in Q3" in text


def _spy_syncs(monkeypatch) -> tuple[list[str], list[str]]:
    """(paths fsynced, file systems synced whole) from here on."""
    import os

    import cortexgraph.vault_sync.atomic_file as atomic_file_module

    fsynced: list[str] = []
    whole: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        fsynced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(
        atomic_file_module,
        "_sync_whole_filesystem",
        lambda path: whole.append(str(path)),
        raising=False,
    )
    return fsynced, whole


def test_a_flush_after_a_few_notes_fsyncs_just_those_files(tmp_path, monkeypatch) -> None:
    # syncfs waits for every dirty page on the disk, other programs' too: an hourly run's
    # three notes should cost three fsyncs, not a wait on whatever else is writing.
    store, ids = _store([f"Sam moved ledger {i} to PostgreSQL." for i in range(3)])
    vault = tmp_path / "vault"
    fsynced, whole = _spy_syncs(monkeypatch)
    with ObsidianNoteSink(vault, batch=True) as sink:
        written = [promote_memory(store, sink, i, now=NOW, force=True) for i in ids]
    assert whole == []
    for note in written:
        path = Path(note.path) if Path(note.path).is_absolute() else vault / note.path
        assert str(path.resolve()) in fsynced  # each note, after its last write
        assert str(path.resolve().parent) in fsynced  # and the folder it was renamed into
    entity = vault / "cortexgraph" / "entities" / "PostgreSQL.md"
    assert str(entity.resolve()) in fsynced


def test_a_flush_after_many_notes_syncs_the_file_system_once(tmp_path, monkeypatch) -> None:
    import cortexgraph.vault_sync.atomic_file as atomic_file_module

    monkeypatch.setattr(atomic_file_module, "FSYNC_EACH_UP_TO", 2, raising=False)
    store, ids = _store([f"Sam moved ledger {i} to PostgreSQL." for i in range(5)])
    vault = tmp_path / "vault"
    fsynced, whole = _spy_syncs(monkeypatch)
    with ObsidianNoteSink(vault, batch=True) as sink:
        for memory_id in ids:
            promote_memory(store, sink, memory_id, now=NOW, force=True)
    assert len(whole) == 1
    assert not any(p.endswith(".md") for p in fsynced)


def test_a_flush_fsyncs_its_files_at_once_then_their_folders(tmp_path, monkeypatch) -> None:
    # One fsync after another waits for a journal commit each (19 of them were 60-85 ms of a
    # 10k run's promote step under load); in flight together, the file system commits them
    # at once. The folders (the renames into them) still come after every file.
    import os
    import threading

    import cortexgraph.vault_sync.atomic_file as atomic_file_module

    atomic_file_module.sync_filesystem(tmp_path)  # what earlier tests left unsynced
    notes = [tmp_path / "notes" / f"note {i}.md" for i in range(3)]
    for note in notes:
        atomic_file_module.atomic_write_text(note, "text", durable=False)
    together = threading.Barrier(len(notes), timeout=10)  # all three in flight, or broken
    order: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if path.endswith(".md"):
            together.wait()
        order.append(path)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    atomic_file_module.sync_filesystem(tmp_path)
    assert sorted(order[:3]) == sorted(str(n.resolve()) for n in notes)
    assert str((tmp_path / "notes").resolve()) in order[3:]


def test_a_batch_sink_writes_the_note_map_once_a_run(tmp_path: Path, monkeypatch) -> None:
    """A run that catches up on a changed folder and then promotes writes the locator's map at
    its flush only, not also after the catch-up (250 KB at 10k memories, twice a run)."""
    store, ids = _store([f"Sam moved ledger {i} to PostgreSQL." for i in range(3)])
    vault = tmp_path / "vault"
    with ObsidianNoteSink(vault, batch=True) as sink:
        promote_memory(store, sink, ids[0], now=NOW, force=True)
    saved: list[int] = []
    real_save = note_locator_module.NoteLocator.save

    def counting_save(self) -> None:
        saved.append(int(self._unsaved))
        real_save(self)

    monkeypatch.setattr(note_locator_module.NoteLocator, "save", counting_save)
    with ObsidianNoteSink(vault, batch=True) as sink:  # the last run's notes changed the folder
        for memory_id in ids[1:]:
            promote_memory(store, sink, memory_id, now=NOW, force=True)
        assert sink.locator.catch_ups == 1 and sum(saved) == 0
    assert sum(saved) == 1
    again = ObsidianNoteSink(vault, batch=True)  # what the run learnt was kept
    assert all(again.find_note(memory_id) is not None for memory_id in ids)
    assert again.locator.reads == 0
