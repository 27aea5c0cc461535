"""run_consolidation embeds through the server's own embedding cache (issue 35): a memory whose
vector the server already holds is not embedded again, and what a run embeds is kept for the
next run, in this server and the next one. The real model, driven through the SDK's client;
the cache's own counters say what the model was asked for."""

from __future__ import annotations

from mcp_helpers import session_payloads

from cortexgraph.storage import open_store

STATEMENTS = [
    "The billing service stores invoices in PostgreSQL",
    "Billing service invoices are stored in PostgreSQL",
    "The team lunch is on Friday at noon",
    "Deploys are frozen during the last week of the quarter",
]
# Transcript lines: the agents embed what was said (no speaker), the search the whole line
# with the line saved before it, so a first run must embed these itself.
LINES = [
    "Ana: we moved the billing ledger to Postgres last week",
    "Tom: nice, did the nightly migrations survive?",
    "Ana: yes, Alembic runs them at 2am now",
]


def _session(tmp_path, *calls):
    return session_payloads(tmp_path, *calls, enable_embeddings=True)


def test_a_run_reuses_the_vectors_the_server_embedded_for_search(tmp_path):
    store = open_store(tmp_path / "stm")
    for text in STATEMENTS:
        store.save(text, tags=["notes"])
    # The server embeds the store for search, and writes its vectors back at shutdown.
    [found] = _session(tmp_path, ("search_memory", {"query": "where are invoices kept?"}))
    assert found["results"][0]["content"].startswith(("The billing", "Billing"))

    [run] = _session(tmp_path, ("run_consolidation", {"dry_run": True}))
    assert run["vectors"]["embedded"] == 0, run["notes"]
    assert run["vectors"]["from_cache"] >= len(STATEMENTS)
    assert any("answered from the server's embedding cache" in n for n in run["notes"])


def test_what_a_run_embeds_is_kept_for_the_next_run_and_the_next_server(tmp_path):
    saves = [("save_memory", {"content": line}) for line in LINES]
    *_, first, again = _session(
        tmp_path,
        *saves,
        ("run_consolidation", {"dry_run": True}),
        ("run_consolidation", {"dry_run": True}),
    )
    assert first["vectors"]["embedded"] >= len(LINES)  # what was said: not what search holds
    assert again["vectors"]["embedded"] == 0
    [fresh] = _session(tmp_path, ("run_consolidation", {"dry_run": True}))
    assert fresh["vectors"]["embedded"] == 0, fresh["notes"]
