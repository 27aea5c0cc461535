"""Promote -> read the vault back with obsidiantools: every field, link and tag intact."""

from __future__ import annotations

from pathlib import Path

from obsidiantools.api import Vault

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import LTMIndex, ObsidianNoteSink, promote_memory

NOW = 1_750_000_000.0


def test_promoted_notes_read_back_through_obsidiantools(tmp_path: Path, capfd) -> None:
    vault = tmp_path / "vault"
    store = InMemoryStore()
    sink = ObsidianNoteSink(vault, "ltm")
    base = store.save(
        "Ledger writes must be idempotent", tags=["db"], entities=["Ledger"], now=NOW - 86400
    )
    m = store.save(
        "We chose PostgreSQL for the ledger",
        tags=["db", "arch/decisions", "machine learning"],
        entities=["PostgreSQL", "Ledger"],
        source="design meeting",
        context="Q3 architecture review",
        now=NOW - 86400,
    )
    store.update(m.id, use_count=6, strength=1.5)
    store.add_relation(m.id, base.id, "supports", now=NOW)
    promote_memory(store, sink, base.id, now=NOW, force=True)
    out = promote_memory(store, sink, m.id, reason="used 6 times", now=NOW)
    name = Path(out.path).stem

    ot = Vault(vault).connect(show_nested_tags=True).gather()
    fm = ot.front_matter_index[name]
    assert fm["id"] == m.id
    assert fm["title"] == "We chose PostgreSQL for the ledger"
    assert fm["tags"] == ["db", "arch/decisions", "machine-learning"]
    assert fm["entities"] == ["PostgreSQL", "Ledger"]
    assert fm["source"] == "design meeting"
    assert fm["strength"] == 1.5 and fm["use_count"] == 6
    assert fm["promotion_reason"] == "used 6 times"
    assert fm["aliases"] == ["We chose PostgreSQL for the ledger"]
    assert fm["cortexgraph"] == {"version": "2.0"}
    for key in ("created", "updated", "promoted_at"):
        assert isinstance(fm[key], str) and fm[key].endswith("+00:00")

    assert ot.wikilinks_index[name] == ["Ledger writes must be idempotent", "PostgreSQL", "Ledger"]
    assert name in ot.get_backlinks("Ledger writes must be idempotent")
    assert name in ot.get_backlinks("PostgreSQL")  # the entity note exists and is linked
    assert "PostgreSQL" in ot.md_file_index and "Ledger" in ot.md_file_index
    assert ot.get_wikilinks("PostgreSQL") == [name]  # the entity note lists its mentions
    assert sorted(ot.get_wikilinks("Ledger")) == sorted([name, "Ledger writes must be idempotent"])
    assert ot.nonexistent_notes == []  # no dangling links anywhere
    text = ot.get_source_text(name)
    assert "We chose PostgreSQL for the ledger" in text and "Q3 architecture review" in text

    # Our own index agrees with obsidiantools on the same notes.
    idx = LTMIndex.open(vault)
    record = idx.by_memory_id(m.id)
    assert record is not None and record.path == out.path
    assert list(record.wikilinks) == ot.wikilinks_index[name]
    assert list(record.tags) == fm["tags"]
    assert idx.backlinks("ltm/entities/PostgreSQL.md") == [out.path]
    assert capfd.readouterr().out == ""  # nothing on stdout: it is the MCP channel
