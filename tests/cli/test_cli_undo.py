"""Undo for every automatic change, and the history that shows it, through the real CLI."""

from __future__ import annotations

from cli_helpers import NOW

from cortexgraph.agents.merge_ops import apply_plan, plan_merge
from cortexgraph.agents.undo import collect_garbage
from cortexgraph.storage.decay import DAY
from cortexgraph.storage.graveyard import Graveyard
from cortexgraph.storage.models import MemoryStatus


def _merged(cli):
    store = cli.store()
    a = store.save("Billing invoices are stored in PostgreSQL", tags=["billing"], now=NOW)
    b = store.save("The billing service keeps invoices in PostgreSQL", tags=["db"], now=NOW)
    c = store.save("Alembic runs the billing migrations nightly", now=NOW)
    rel = store.add_relation(a.id, c.id, "related", now=NOW)
    plan = plan_merge([a, b], 0.9, NOW + 60, 0.2, 0.8)
    apply_plan(store, plan, NOW + 60, issue_id=None)
    return a, b, c, rel, plan.memory.id


def test_undo_merge_restores_sources_and_relations_and_history_shows_both(cli):
    a, b, c, rel, merged_id = _merged(cli)
    assert cli.store().get(a.id).status is MemoryStatus.ARCHIVED
    out = cli.json("undo", "merge", merged_id)
    assert out["success"] and set(out["memory_ids"]) == {a.id, b.id}
    store = cli.store()
    assert store.find(merged_id) is None
    assert {store.get(a.id).status, store.get(b.id).status} == {MemoryStatus.ACTIVE}
    assert [r.id for r in store.relations(memory_id=c.id)] == [rel.id]  # the original is back
    events = [e["event"] for e in cli.json("history", a.id)["events"]]
    assert events[0] == "saved" and "merged into" in events and events[-1] == "merge undone"


def test_unarchive_of_a_merge_source_says_to_undo_the_merge(cli):
    a, _, _, _, merged_id = _merged(cli)
    done = cli("unarchive", a.id, ok=False)
    assert done.returncode == 2
    assert f"merge {merged_id}" in done.stderr and "undo" in done.stderr
    assert cli.store().get(a.id).status is MemoryStatus.ARCHIVED  # nothing changed


def test_unknown_id_is_exit_1_with_a_message(cli):
    cli.store()
    done = cli("undo", "merge", "no-such-memory", ok=False)
    assert done.returncode == 1 and "no-such-memory" in done.stderr


def test_unpromote_moves_the_note_to_the_vault_trash(cli):
    from cortexgraph.vault_sync import ObsidianNoteSink, promote_memory

    store = cli.store()
    m = store.save("We chose PostgreSQL 16 for billing because of row-level security", now=NOW)
    with ObsidianNoteSink(cli.vault) as sink:
        outcome = promote_memory(store, sink, m.id, reason="forced", now=NOW + 1, force=True)
    note = cli.vault / outcome.path
    text = note.read_text()
    out = cli.json("unpromote", m.id)
    assert not note.exists()
    trashed = cli.vault / out["trashed_to"]
    assert out["trashed_to"].startswith(".trash/") and trashed.read_text() == text
    back = cli.store().get(m.id)
    assert back.status is MemoryStatus.ACTIVE and back.promoted_to is None
    events = [e["event"] for e in cli.json("history", m.id)["events"]]
    assert events[-2:] == ["promoted", "unpromoted"]
    again = cli("unpromote", m.id, ok=False)
    assert again.returncode == 2 and "not promoted" in again.stderr


def test_gc_archives_first_deletes_after_grace_and_undo_gc_brings_it_back(cli):
    store = cli.store()
    old = store.save("the fax number of the old office", now=NOW)
    keep = store.save("the new office has no fax", now=NOW)
    rel = store.add_relation(old.id, keep.id, "related", now=NOW)
    yard = Graveyard(cli.storage)
    first = collect_garbage(store, [old.id], delete=True, now=NOW, grace_days=7, graveyard=yard)
    assert first.archived == (old.id,) and first.purged == ()
    early = collect_garbage(store, [], delete=True, now=NOW + 6 * DAY, grace_days=7, graveyard=yard)
    assert early.purged == () and store.get(old.id).status is MemoryStatus.ARCHIVED
    late = collect_garbage(store, [], delete=True, now=NOW + 8 * DAY, grace_days=7, graveyard=yard)
    assert late.purged == (old.id,) and store.find(old.id) is None
    out = cli.json("undo", "gc", old.id)
    assert out["memory_ids"] == [old.id]
    store = cli.store()
    assert store.get(old.id).status is MemoryStatus.ACTIVE
    assert [r.id for r in store.relations(memory_id=old.id)] == [rel.id]
    events = [e["event"] for e in cli.json("history", old.id)["events"]]
    assert "archived" in events and "deleted by gc" in events and events[-1] == "restored from gc"
    twice = cli("undo", "gc", old.id, ok=False)
    assert twice.returncode == 2 and "not collected by gc" in twice.stderr


def test_unarchive_inside_the_grace_period(cli):
    store = cli.store()
    old = store.save("a detail nobody used", now=NOW)
    collect_garbage(store, [old.id], delete=False, now=NOW, grace_days=7)
    out = cli.json("unarchive", old.id)
    assert out["memory_ids"] == [old.id]
    assert "gc" not in cli.store().get(old.id).meta.extra


def test_history_includes_the_issue_log(cli):
    from cortexgraph.storage.beads import open_tracker

    store = cli.store()
    m = store.save("a memory the decay agent worries about", now=NOW)
    store.touch(m.id, now=NOW + 3600)
    tracker = open_tracker(cli.storage, "cg")
    issue = tracker.create(
        "Fading memory", labels=["consolidation:decay"], metadata={"memory_id": m.id}
    )
    tracker.close(issue.id, "memory used again")
    events = cli.json("history", m.id)["events"]
    kinds = [(e["event"], e["source"]) for e in events]
    assert ("saved", "store") in kinds and ("touched", "store") in kinds
    assert ("issue opened", "beads") in kinds and ("issue closed", "beads") in kinds
    assert all(e["time"] for e in events)
    table = cli("history", m.id).stdout
    assert "issue closed" in table and "memory used again" in table


def test_history_of_an_undone_merge_names_the_deleted_merged_memory(cli):
    """`history ID` resolves prefixes against the live memories; the merged memory an undo
    deleted is in none of them, yet its stored lines tell its history: its full id answered
    "no memory with id ..." where memory_history (MCP) showed it."""
    from cortexgraph.agents.undo import undo_merge_of

    *_, merged_id = _merged(cli)
    undo_merge_of(cli.store(), merged_id, now=NOW + 120, cause="test")
    events = [e["event"] for e in cli.json("history", merged_id)["events"]]
    assert events[0] == "merged from"
    unknown = cli("history", "12345678", ok=False)
    assert unknown.returncode == 1 and "no memory with id '12345678'" in unknown.stderr
