"""search_unified's archive tier (issue 34): what gc archived stays findable, labelled, where it
ranked before (its decay already puts it below equally relevant active memories); a merge's
archived sources stay behind their merged memory."""

from __future__ import annotations

import pytest

from cortexgraph.agents.merge_ops import apply_plan, plan_merge
from cortexgraph.agents.undo import collect_garbage
from cortexgraph.settings import Settings
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.decay import DAY
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.vault_sync import search_unified
from cortexgraph.vault_sync.unified_search import ARCHIVE_WEIGHT

NOW = 1_750_000_000.0
OLD = NOW - 200 * DAY  # saved once and never used since: far below the forget threshold
VET = "Biscuit the cat sees the vet on Friday"


def _gc(store: InMemoryStore, *ids: str) -> None:
    """gc as the consolidation flow runs it (archive mode)."""
    result = collect_garbage(store, list(ids), delete=False, now=NOW, grace_days=7)
    assert set(result.archived) == set(ids)


def test_a_memory_gc_archived_is_found_and_labelled_archived() -> None:
    store = InMemoryStore()
    old = store.save(VET, now=OLD)
    fresh = store.save("The vet bill for Biscuit was paid in cash", now=NOW - 3600)
    _gc(store, old.id)
    assert store.get(old.id).status is MemoryStatus.ARCHIVED

    hits = search_unified(store, None, "when does Biscuit see the vet", now=NOW, verbose=True)
    by_id = {h.memory_id: h for h in hits}
    assert old.id in by_id and fresh.id in by_id
    assert by_id[old.id].archived and by_id[old.id].to_json()["archived"] is True
    assert by_id[old.id].details["archive_weight"] == ARCHIVE_WEIGHT
    assert by_id[fresh.id].to_json()["archived"] is False


def test_an_active_memory_outranks_an_equally_relevant_archived_one_not_a_weaker_one() -> None:
    store = InMemoryStore()
    archived = store.save(VET, now=OLD)
    _gc(store, archived.id)
    twin = store.save(VET, now=NOW - 3600)  # the same words, still active
    weak = store.save("The vet clinic on Main Street has a new phone number", now=NOW - 3600)

    hits = search_unified(store, None, "Biscuit cat vet Friday", now=NOW)
    order = [h.memory_id for h in hits]
    assert order.index(twin.id) < order.index(archived.id) < order.index(weak.id), hits
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_gc_archiving_a_memory_moves_nothing_in_the_ranking() -> None:
    store = InMemoryStore()
    old = store.save(VET, now=OLD)
    # less relevant than the old memory by less than an archive weight of 0.9 would take off
    store.save("Biscuit sees the vet on Friday, then we walk in the park and buy food", now=NOW)
    query = "when does Biscuit see the vet on Friday"
    before = search_unified(store, None, query, now=NOW)
    assert before[0].memory_id == old.id
    _gc(store, old.id)
    after = search_unified(store, None, query, now=NOW)
    assert [(h.memory_id, h.score) for h in after] == [(h.memory_id, h.score) for h in before]
    assert after[0].archived


def test_a_merge_source_stays_hidden_behind_its_merged_memory() -> None:
    store = InMemoryStore()
    a = store.save("Biscuit the cat loves tuna", now=OLD)
    b = store.save("Biscuit the cat really loves tuna", now=OLD + 60)
    forgotten = store.save("Biscuit the cat hated tuna as a kitten", now=OLD)
    apply_plan(store, plan_merge([a, b], 0.9, NOW - DAY, 0.1, 0.8), NOW - DAY, None)
    _gc(store, forgotten.id)
    assert {store.get(i).status for i in (a.id, b.id)} == {MemoryStatus.ARCHIVED}

    hits = search_unified(store, None, "what does Biscuit love, tuna?", now=NOW)
    assert {h.memory_id for h in hits}.isdisjoint({a.id, b.id})  # archived by the merge
    (merged,) = [h for h in hits if not h.archived]
    assert "loves tuna" in merged.preview
    assert [h.memory_id for h in hits if h.archived] == [forgotten.id]  # archived by gc


def test_archive_weight_zero_leaves_archived_memories_out_and_settings_pass_it() -> None:
    store = InMemoryStore()
    old = store.save(VET, now=OLD)
    _gc(store, old.id)
    assert search_unified(store, None, "Biscuit vet", now=NOW, archive_weight=0.0) == []
    weights = Settings(search_archive_weight=0.25).unified_search_weights()
    (hit,) = search_unified(store, None, "Biscuit vet", now=NOW, verbose=True, **weights)
    assert hit.archived
    assert hit.score == pytest.approx(weights["stm_weight"] * 0.25 * hit.details["stm_score"])
    assert Settings().search_archive_weight == ARCHIVE_WEIGHT
