"""Consolidation, unified search and activation tools through the in-process client."""

from __future__ import annotations

import anyio
from mcp import Client
from mcp_helpers import error_text, folder_bytes, make_settings, payload

from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store

PARAPHRASES = [
    "The billing service stores invoices in PostgreSQL",
    "Billing service invoices are stored in PostgreSQL",
    "Invoices for the billing service are kept in PostgreSQL",
]


def _seed(tmp_path):
    store = open_store(tmp_path / "stm")
    ids = [store.save(t, tags=["billing"]).id for t in PARAPHRASES]
    store.save("The team lunch is on Friday at noon", tags=["social"])
    return ids


def _call(tmp_path, *calls):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def test_mcp_cluster_then_consolidate_preview_changes_nothing_then_apply(tmp_path):
    ids = _seed(tmp_path)
    before = folder_bytes(tmp_path / "stm")
    [clustered, again] = _call(
        tmp_path, ("cluster_memories", {"threshold": 0.3}), ("cluster_memories", {"threshold": 0.3})
    )
    out = payload(clustered)
    assert payload(again)["clusters"] == out["clusters"]  # deterministic ids
    assert out["similarity"] == "tfidf"  # embeddings are off in these settings, and it says so
    billing = [c for c in out["clusters"] if set(c["memory_ids"]) == set(ids)]
    assert billing, out
    cid = billing[0]["cluster_id"]
    assert folder_bytes(tmp_path / "stm") == before

    # cluster ids are remembered per server session: detect again in the same session.
    _, preview, applied = _call(
        tmp_path,
        ("cluster_memories", {"threshold": 0.3}),
        ("consolidate_memories", {"cluster_id": cid, "mode": "preview"}),
        ("consolidate_memories", {"cluster_id": cid, "mode": "apply"}),
    )
    p = payload(preview)["results"][0]
    assert p["status"] == "previewed" and "PostgreSQL" in p["content"]
    a = payload(applied)["results"][0]
    assert a["status"] == "merged" and a["merged_id"]
    store = open_store(tmp_path / "stm")
    assert store.get(a["merged_id"]).status.value == "active"
    assert {store.get(i).status.value for i in ids} == {"archived"}


def test_mcp_consolidate_unknown_cluster_is_an_error(tmp_path):
    _seed(tmp_path)
    before = folder_bytes(tmp_path / "stm")
    [r] = _call(tmp_path, ("consolidate_memories", {"cluster_id": "c-0000000000", "mode": "apply"}))
    assert "run cluster_memories" in error_text(r)
    [r] = _call(tmp_path, ("consolidate_memories", {"cluster_id": "../c"}))
    assert "malformed cluster id" in error_text(r)
    assert folder_bytes(tmp_path / "stm") == before


def test_mcp_run_consolidation_dry_run_changes_nothing_anywhere(tmp_path):
    _seed(tmp_path)
    before = folder_bytes(tmp_path)
    [r] = _call(tmp_path, ("run_consolidation", {}))
    out = payload(r)
    assert out["dry_run"] is True
    assert out["agents"] == ["decay", "cluster", "merge", "promote", "relations"]
    assert set(out["summaries"]) == set(out["agents"])
    assert any("memory" in n for n in out["notes"])  # no beads repo: said out loud
    assert folder_bytes(tmp_path) == before
    assert list((tmp_path / "vault").iterdir()) == []  # the vault as it was: empty


def test_mcp_run_consolidation_for_real_then_list_issues(tmp_path):
    _seed(tmp_path)
    run, issues = _call(
        tmp_path,
        ("run_consolidation", {"dry_run": False, "agents": ["cluster"]}),
        ("list_consolidation_issues", {"status": "all"}),
    )
    out = payload(run)
    assert out["dry_run"] is False and out["agents"] == ["cluster"]
    listed = payload(issues)
    assert "tracked in" in listed["tracker"]
    assert listed["total"] == len(listed["issues"])


def test_mcp_search_unified_finds_promoted_note_and_stm(tmp_path):
    store = open_store(tmp_path / "stm")
    keep = store.save("Deploys go out on Tuesdays via the blue-green pipeline", tags=["ops"])
    store.save("Rollbacks of a deploy take two minutes", tags=["ops"])
    promoted, found = _call(
        tmp_path,
        ("promote_memory", {"memory_id": keep.id, "force": True}),
        ("search_unified", {"query": "deploy pipeline", "verbose": True}),
    )
    assert payload(promoted)["promoted_count"] == 1
    out = payload(found)
    sources = {r["source"] for r in out["results"]}
    assert sources & {"ltm", "both"} and "stm" in sources, out
    assert "notes in" in out["ltm"]


def test_mcp_promote_auto_detect_dry_run_writes_nothing(tmp_path):
    store = open_store(tmp_path / "stm")
    m = store.save("A memory used many times", tags=["x"])
    for _ in range(6):
        store.touch(m.id)
    before = folder_bytes(tmp_path)
    [r] = _call(tmp_path, ("promote_memory", {"auto_detect": True, "dry_run": True}))
    out = payload(r)
    assert out["candidates_found"] >= 1 and m.id in {x["memory_id"] for x in out["results"]}
    assert folder_bytes(tmp_path) == before


def test_mcp_activation_tools_answer_or_say_what_is_missing(tmp_path):
    r1, r2, saved = _call(
        tmp_path,
        ("analyze_message", {"message": "Remember that I prefer dark roast coffee"}),
        ("analyze_for_recall", {"message": "What did we decide about the database?"}),
        ("save_memory", {"content": "I prefer dark roast coffee"}),
    )
    analysis, recall, saved = payload(r1), payload(r2), payload(saved)
    assert analysis["should_save"] and analysis["action_recommendation"] == "MUST_SAVE"
    assert recall["should_search"] and "database" in recall["suggested_query"]
    # Nothing but content was given: strength (and entities or tags, where any) were filled.
    assert "strength" in saved["enrichment_applied"]
    assert saved["strength"] >= 1.0
