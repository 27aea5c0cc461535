"""Unified STM+LTM search: one ranking, weights, de-duplication, filters, embeddings."""

from __future__ import annotations

from pathlib import Path

import pytest

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import LTMIndex, ObsidianNoteSink, promote_memory, search_unified

NOW = 1_750_000_000.0


@pytest.fixture
def world(tmp_path: Path):
    vault = tmp_path / "vault"
    (vault / "Personal").mkdir(parents=True)
    (vault / "Personal" / "Espresso.md").write_text(
        "---\ntags: [coffee, hobby/kitchen]\n---\n# Espresso ratio\n\n"
        "A good espresso uses 18 g of coffee for 36 g out, in 28 seconds.\n"
    )
    (vault / "Personal" / "Garden.md").write_text("# Garden\n\nTomatoes need full sun. #hobby\n")
    store = InMemoryStore()
    promoted = store.save(
        "The payments service retries webhooks three times", tags=["payments"], now=NOW - 3600
    )
    active = store.save(
        "Payments webhooks are signed with HMAC-SHA256", tags=["payments"], now=NOW - 3600
    )
    store.save("Old unrelated memory about garden tools", now=NOW - 3600)
    sink = ObsidianNoteSink(vault, "cortexgraph")
    note = promote_memory(store, sink, promoted.id, now=NOW, force=True)
    return store, LTMIndex.open(vault), promoted, active, note


def test_one_ranking_over_both_sides_with_promoted_memory_once(world) -> None:
    store, idx, promoted, active, note = world
    results = search_unified(store, idx, "payments webhooks", now=NOW, verbose=True)
    ids = [r.memory_id for r in results]
    assert ids.count(promoted.id) == 1  # the memory and its note are one result
    both = next(r for r in results if r.memory_id == promoted.id)
    assert both.source == "both" and both.note_path == note.path
    assert "stm_score" in both.details and "ltm_score" in both.details
    assert {r.source for r in results} >= {"both", "stm"}
    assert any(r.memory_id == active.id and r.source == "stm" for r in results)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_ltm_only_notes_are_found_and_weights_change_the_order(world) -> None:
    store, idx, *_ = world
    res = search_unified(store, idx, "espresso coffee", now=NOW)
    assert res[0].source == "ltm" and res[0].note_path == "Personal/Espresso.md"
    assert res[0].title == "Espresso ratio"
    # Garden: an LTM note and an STM memory both match; the weights pick the winner.
    stm_first = search_unified(store, idx, "garden", stm_weight=1.0, ltm_weight=0.1, now=NOW)
    ltm_first = search_unified(store, idx, "garden", stm_weight=0.1, ltm_weight=1.0, now=NOW)
    assert stm_first[0].source == "stm" and ltm_first[0].source == "ltm"
    assert search_unified(store, idx, "espresso", ltm_weight=0.0, now=NOW) == []


def test_tags_filter_both_sides_including_nested_tags(world) -> None:
    store, idx, *_ = world
    hobby = search_unified(store, idx, "", tags=["hobby"], now=NOW)
    assert {r.note_path for r in hobby} == {"Personal/Espresso.md", "Personal/Garden.md"}
    pay = search_unified(store, idx, "webhooks", tags=["payments"], now=NOW)
    assert pay and all("payments" in r.tags for r in pay)


def test_verbose_controls_what_json_carries(world) -> None:
    store, idx, *_ = world
    quiet = search_unified(store, idx, "payments", now=NOW)[0]
    assert quiet.details == {} and "note_path" not in quiet.to_json()
    loud = search_unified(store, idx, "payments", now=NOW, verbose=True)
    both = next(r for r in loud if r.source == "both").to_json()
    assert both["memory_id"] and both["note_path"].endswith(".md")
    assert "ltm_score" in both and "stm_score" in both


def test_limit_and_no_index(world) -> None:
    store, idx, *_ = world
    assert len(search_unified(store, idx, "payments webhooks garden", limit=2, now=NOW)) == 2
    only_stm = search_unified(store, None, "payments", now=NOW)
    assert only_stm and {r.source for r in only_stm} == {"stm"}


def test_embeddings_find_notes_without_shared_terms(world, embedder) -> None:
    store, idx, *_ = world
    query = "tomatoes sun"
    plain = {r.note_path for r in search_unified(store, idx, query, now=NOW)}
    assert "Personal/Garden.md" in plain
    dense = search_unified(store, idx, query, embedder=embedder, now=NOW, verbose=True)
    garden = next(r for r in dense if r.note_path == "Personal/Garden.md")
    assert garden.details["ltm_semantic"] > 0.3
    calls = embedder.calls
    search_unified(store, idx, query, embedder=embedder, now=NOW)
    assert embedder.calls == calls + 1  # note vectors are cached; only the query is embedded
    assert list(idx.vault.glob(".cortexgraph/.embeddings-*.npz"))


@pytest.mark.slow
def test_real_model_matches_meaning(world) -> None:
    from cortexgraph.storage.embeddings import default_embedder

    model = default_embedder()
    if model is None:
        pytest.skip("the embedding model package is not installed")
    store, idx, *_ = world
    res = search_unified(store, idx, "how to brew a strong coffee shot", embedder=model, now=NOW)
    assert res[0].note_path == "Personal/Espresso.md"


def test_a_python_caller_gets_the_vault_side_fused_as_the_cli_and_mcp_fuse_it(
    world, embedder
) -> None:
    """search_unified's own defaults are the configured ones: a note's fused score is the same
    with no weights given as with the weights the edges pass (it fused at 0.5 against 0.7)."""
    from cortexgraph.settings import Settings

    store, idx, *_ = world
    query = "tomatoes sun espresso"
    plain = search_unified(store, idx, query, embedder=embedder, now=NOW, verbose=True)
    edge = search_unified(
        store,
        idx,
        query,
        embedder=embedder,
        now=NOW,
        verbose=True,
        **Settings().unified_search_weights(),
    )
    assert [(r.note_path, r.score) for r in plain] == [(r.note_path, r.score) for r in edge]
    assert any(r.details.get("ltm_semantic", 0) > 0 for r in plain)


def test_a_verbose_memory_result_says_when_it_was_saved_and_last_used(world) -> None:
    """/recall (plugins/claude-code/commands/recall.md) answers "when (created/last used)"
    from search_unified's verbose results, as it did from search_memory's full records."""
    store, idx, promoted, active, _ = world
    store.update(active.id, last_used=int(NOW - 60))
    loud = {
        r.memory_id or r.note_path: r.to_json()
        for r in search_unified(store, idx, "payments espresso", now=NOW, verbose=True)
    }
    for memory in (store.get(promoted.id), store.get(active.id)):
        shown = loud[memory.id]
        assert (shown["created_at"], shown["last_used"]) == (memory.created_at, memory.last_used)
    assert loud[active.id]["last_used"] == int(NOW - 60)
    note_only = loud["Personal/Espresso.md"]
    assert "created_at" not in note_only and "last_used" not in note_only
    quiet = search_unified(store, idx, "payments", now=NOW)[0].to_json()
    assert "created_at" not in quiet
