"""Temporal truth: realistic updates supersede the right memory, and only that one."""

from __future__ import annotations

import pytest
from retrieval_helpers import DAY, NOW

from cortexgraph.retrieval import memory_retrieve
from cortexgraph.retrieval.core import resolve_memory_id
from cortexgraph.retrieval.forget import memory_forget
from cortexgraph.retrieval.temporal import (
    SUPERSEDED_BY,
    find_superseded,
    has_update_cue,
    history_of,
    record_update,
    restore,
    supersede,
)
from cortexgraph.storage import InMemoryStore, open_store
from cortexgraph.storage.errors import InvalidInputError, MemoryNotFoundError

# (old fact, its entities, the update, its entities)
UPDATES = [
    (
        "Sarah lives in Paris with her two cats",
        ["sarah", "paris"],
        "Sarah moved from Paris to London last month",
        ["sarah", "paris", "london"],
    ),
    (
        "We use MySQL for the billing database",
        ["mysql", "billing"],
        "We now use Postgres instead of MySQL for billing",
        ["postgres", "mysql", "billing"],
    ),
    (
        "The FastAPI service runs on port 8000",
        ["fastapi"],
        "The FastAPI service moved to port 8081",
        ["fastapi"],
    ),
    (
        "Marcus works in the Oslo office",
        ["marcus", "oslo"],
        "Marcus relocated to Bergen last week",
        ["marcus", "bergen"],
    ),
    (
        "Nina is vegetarian and never eats meat",
        ["nina"],
        "Nina is no longer vegetarian, she eats chicken now",
        ["nina"],
    ),
    (
        "The scheduler will be written in Go",
        ["scheduler", "go"],
        "The scheduler is going to be in Rust after all, not Go",
        ["scheduler", "rust", "go"],
    ),
]


@pytest.mark.parametrize(("old_text", "old_ents", "new_text", "new_ents"), UPDATES)
def test_realistic_updates_supersede_the_old_fact(store, old_text, old_ents, new_text, new_ents):
    old = store.save(old_text, entities=old_ents, now=NOW - 30 * DAY)
    bystander = store.save(
        f"{old_ents[0].title()} has a birthday party on June 3rd",
        entities=[old_ents[0]],
        now=NOW - 20 * DAY,
    )
    new = store.save(new_text, entities=new_ents, now=NOW)
    assert has_update_cue(new_text)
    outcomes = record_update(store, new, update_cue=True)
    assert [o.old.id for o in outcomes] == [old.id]
    stored = store.get(old.id)
    assert stored.meta.extra["superseded_by"] == new.id
    assert stored.meta.extra["valid_until"] == NOW
    assert store.get(bystander.id).meta.extra.get("superseded_by") is None
    rel = [r for r in store.relations(old.id) if r.metadata.get("kind") == SUPERSEDED_BY]
    assert len(rel) == 1 and (rel[0].from_memory_id, rel[0].to_memory_id) == (old.id, new.id)
    # the old memory is kept, and retrieval prefers the current fact
    assert old.id in store
    ctx = memory_retrieve(store, old_text, 500, now=NOW)
    assert new.id in ctx.memory_ids and old.id not in ctx.memory_ids
    with_history = memory_retrieve(store, old_text, 500, include_history=True, now=NOW)
    assert old.id in with_history.memory_ids
    assert "## history" in with_history.text and f"now m:{new.id[:8]}" in with_history.text


NOT_UPDATES = [
    # same subject, different attribute
    ("Sarah lives in Paris", ["sarah", "paris"], "Sarah now loves jazz", ["sarah", "jazz"]),
    # same attribute words, different subject
    ("Tom lives in Rome", ["tom", "rome"], "Sarah moved to Rome", ["sarah", "rome_city"]),
]


@pytest.mark.parametrize(("old_text", "old_ents", "new_text", "new_ents"), NOT_UPDATES)
def test_unrelated_facts_are_left_alone(store, old_text, old_ents, new_text, new_ents):
    store.save(old_text, entities=old_ents, now=NOW - DAY)
    new = store.save(new_text, entities=new_ents, now=NOW)
    assert find_superseded(store, new, update_cue=True) == []


def test_no_update_cue_means_no_supersede(store):
    store.save(
        "Sarah lives in a flat in Paris near the old river",
        entities=["sarah", "paris"],
        now=NOW - DAY,
    )
    new = store.save(
        "Sarah lives in a flat in Paris near the river", entities=["sarah", "paris"], now=NOW
    )
    assert not has_update_cue(new.content)
    assert record_update(store, new, update_cue=False) == []
    assert find_superseded(store, new, update_cue=True) != []  # it is the cue that decides


def test_a_newer_memory_is_never_superseded_by_an_older_one(store):
    newer = store.save("We now use Postgres 16 for billing", entities=["postgres"], now=NOW)
    older = store.save("We use Postgres 15 for billing", entities=["postgres"], now=NOW - DAY)
    assert find_superseded(store, older, update_cue=True) == []
    assert find_superseded(store, newer, update_cue=True)[0].old_id == older.id


def test_explicit_supersedes_skips_detection_and_chains_history(store):
    a = store.save("Deploys happen on Mondays", now=NOW - 20 * DAY)
    b = store.save("Deploys happen on Wednesdays", now=NOW - 10 * DAY)
    c = store.save("Deploys happen on Fridays", now=NOW)
    record_update(store, b, update_cue=False, supersedes=[a.id])
    record_update(store, c, update_cue=False, supersedes=[b.id])
    assert [m.id for m in history_of(store, c.id)] == [b.id, a.id]
    ctx = memory_retrieve(store, "deploys mondays", 300, now=NOW)
    assert ctx.memory_ids == [c.id]  # a superseded match brings in its current successor
    with pytest.raises(InvalidInputError):
        supersede(store, c.id, c.id)
    with pytest.raises(InvalidInputError, match="cycle"):
        supersede(store, b.id, a.id)


def test_restore_undoes_a_supersede(store):
    old = store.save("Sarah lives in Paris", entities=["sarah"], now=NOW - DAY)
    new = store.save("Sarah moved to London", entities=["sarah"], now=NOW)
    record_update(store, new, update_cue=True)
    restore(store, old.id)
    assert store.get(old.id).meta.extra.get("superseded_by") is None
    assert not [r for r in store.relations(old.id) if r.metadata.get("kind") == SUPERSEDED_BY]


def test_supersede_survives_reopening_a_jsonl_store(tmp_path):
    store = open_store(tmp_path / "stm")
    old = store.save("We use MySQL for billing", entities=["mysql"], now=NOW - DAY)
    new = store.save(
        "We switched billing to Postgres instead of MySQL", entities=["mysql", "postgres"], now=NOW
    )
    record_update(store, new, update_cue=True)
    again = open_store(tmp_path / "stm")
    assert again.get(old.id).meta.extra["superseded_by"] == new.id
    assert any(r.to_memory_id == new.id for r in again.relations(old.id))


def test_memory_forget_deprecate_correct_delete(store):
    a = store.save("The office wifi password rotates monthly", now=NOW - DAY)
    out = memory_forget(store, a.id[:8], "deprecate", now=NOW)
    assert out.memory_id == a.id and store.get(a.id).meta.extra["deprecated"] is True
    assert memory_retrieve(store, "office wifi password", 300, now=NOW).memory_ids == []

    b = store.save("Standup is at 9:30", tags=["team"], entities=["standup"], now=NOW - DAY)
    out = memory_forget(store, b.id, "correct", "Standup is at 10:00", now=NOW)
    fixed = store.get(out.correction_id)
    assert fixed.content == "Standup is at 10:00" and fixed.tags == ("team",)
    assert store.get(b.id).meta.extra["superseded_by"] == fixed.id
    assert memory_retrieve(store, "standup time", 300, now=NOW).memory_ids == [fixed.id]

    memory_forget(store, fixed.id, "delete")
    assert fixed.id not in store and store.relations(b.id) == []
    with pytest.raises(InvalidInputError, match="correction"):
        memory_forget(store, b.id, "correct")
    with pytest.raises(InvalidInputError, match="unknown action"):
        memory_forget(store, b.id, "shred")
    with pytest.raises(MemoryNotFoundError):
        memory_forget(store, "00000000-dead", "delete")


def test_id_prefixes_resolve_only_when_unique_and_long_enough(store):
    m = store.save("x", now=NOW)
    assert resolve_memory_id(store, m.id) == m.id
    assert resolve_memory_id(store, f"m:{m.id[:8]}") == m.id
    with pytest.raises(MemoryNotFoundError, match="8"):
        resolve_memory_id(store, m.id[:4])
    with pytest.raises(InvalidInputError):
        resolve_memory_id(store, "../etc/passwd")


def test_of_two_matches_saved_in_one_second_the_later_save_is_superseded():
    # created_at is whole seconds: a burst of saves shares one. "The newest" is then the later
    # save, whatever the random ids (the tie went to the smaller id, which changed run to run).
    for _ in range(30):
        store = InMemoryStore()
        store.save("Sarah lives in Paris", entities=["sarah", "paris"], now=NOW - DAY)
        later = store.save("Sarah lives in Paris", entities=["sarah", "paris"], now=NOW - DAY)
        new = store.save("Sarah moved from Paris to London", entities=["sarah"], now=NOW)
        assert [m.old_id for m in find_superseded(store, new, update_cue=True)] == [later.id]


def test_the_later_save_stays_the_newest_after_an_update_and_a_reopen(tmp_path):
    for draw in range(12):
        path = tmp_path / f"stm{draw}"
        store = open_store(path)
        earlier = store.save("Sarah lives in Paris", entities=["sarah", "paris"], now=NOW - DAY)
        later = store.save("Sarah lives in Paris", entities=["sarah", "paris"], now=NOW - DAY)
        store.update(earlier.id, extra={"checked": True})  # a change is not a later save
        store.compact()
        again = open_store(path)
        new = again.save("Sarah moved from Paris to London", entities=["sarah"], now=NOW)
        assert [m.old_id for m in find_superseded(again, new, update_cue=True)] == [later.id]
        assert [m.old_id for m in find_superseded(store, new, update_cue=True)] == [later.id]
