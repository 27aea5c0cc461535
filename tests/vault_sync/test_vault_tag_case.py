"""Obsidian's tags are case-insensitive (#Billing and #billing are one tag in the tag pane and
in search), so a note listing both showed one tag twice in its Properties, and a tag a person
added in another case next to ours was written back beside it on every update."""

from __future__ import annotations

from pathlib import Path

from obsidiantools.api import Vault

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import ObsidianNoteSink, parse_note_text, promote_memory

NOW = 1_750_000_000.0


def test_a_tag_in_two_cases_is_listed_once(tmp_path: Path) -> None:
    vault, store = tmp_path / "vault", InMemoryStore()
    m = store.save(
        "Invoices go out on the first working day",
        tags=["Billing", "billing", "#BILLING", "ops", "Machine Learning", "machine-learning"],
        now=NOW,
    )
    with ObsidianNoteSink(vault, entity_notes=False) as sink:
        rel = promote_memory(store, sink, m.id, now=NOW, force=True).path
    ot = Vault(vault).connect().gather()
    assert ot.front_matter_index[Path(rel).stem]["tags"] == ["Billing", "ops", "Machine-Learning"]

    path = vault / rel
    path.write_text(path.read_text().replace("- ops\n", "- ops\n- OPS\n- billing\n- mine\n"))
    store.update(m.id, use_count=4)
    with ObsidianNoteSink(vault, entity_notes=False) as sink:
        promote_memory(store, sink, m.id, now=NOW + 60, force=True)
    meta = parse_note_text(path.read_text(encoding="utf-8")).metadata
    assert meta["use_count"] == 4
    assert meta["tags"] == ["Billing", "ops", "Machine-Learning", "mine"]
