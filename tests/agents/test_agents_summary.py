"""Summary memories below the MCP shell (agents/summary.py): sources, extractive text, links."""

from __future__ import annotations

from cortexgraph.agents.summary import (
    extractive_summary,
    period_memories,
    save_summary,
    summary_sources,
)
from cortexgraph.storage import InMemoryStore, MemoryStatus

NOW = 1_750_000_000.0
DAY = 86_400.0


def test_a_period_leaves_out_archived_and_older_memories_and_earlier_summaries_of_its_scope():
    store = InMemoryStore()
    old = store.save("Billing moved to Stripe.", now=NOW - 10 * DAY)
    kept = store.save("Invoices are numbered per tenant.", now=NOW - DAY)
    gone = store.save("A scratch note.", now=NOW - DAY)
    store.update(gone.id, status=MemoryStatus.ARCHIVED)
    earlier = save_summary(store, "Invoices per tenant.", [kept], scope="epoch", method="x")

    period = period_memories(store, days=7, now=NOW)
    assert {m.id for m in period} == {kept.id, earlier.id}
    assert [m.id for m in summary_sources(period, "epoch")] == [kept.id]
    assert {m.id for m in summary_sources(period, "session")} == {kept.id, earlier.id}
    assert old.id not in {m.id for m in period}


def test_a_summary_links_every_source_and_names_their_common_entities():
    store = InMemoryStore()
    sources = [
        store.save(f"Note {i} about Postgres.", entities=["Postgres"], now=NOW + i)
        for i in range(3)
    ]
    summary = save_summary(store, "About Postgres.", sources, scope="session", method="extractive")
    linked = {r.to_memory_id for r in store.relations(summary.id, "consolidated_from")}
    assert linked == {m.id for m in sources}
    assert list(summary.entities) == ["Postgres"] and "summary:session" in summary.tags
    assert summary.meta.extra["summary"]["sources"] == 3


def test_an_extractive_summary_keeps_central_sentences_in_their_order():
    texts = [
        "The invoice service runs on Postgres. The cat sat on the mat.",
        "Postgres stores every invoice. Invoices are numbered per tenant in Postgres.",
    ]
    short = extractive_summary(texts, None, max_sentences=2)
    assert "cat" not in short and short.startswith("The invoice service")
    assert extractive_summary(texts[:1], None, max_sentences=5) == texts[0]
