"""A note's alias is the memory's first sentence, and Obsidian's link suggestions insert it as
a link's label: ``[[<note>|<alias>]]``. A first sentence holding a wikilink or an embed ("Use
[[wikilinks]] sparingly", "see [[Deploy|the checklist]]") gave an alias whose ``]]`` ended
that link early, so picking the note by its words wrote a broken link. (obsidiantools' own link
pattern reads such a link whole, so the aliases themselves are the check.)"""

from __future__ import annotations

from pathlib import Path

from obsidiantools.api import Vault

from cortexgraph.storage import open_store
from cortexgraph.vault_sync import ObsidianNoteSink, parse_note_text, promote_memory
from cortexgraph.vault_sync.note_format import note_text

NOW = 1_750_000_000.0
SENTENCES = [
    "Use [[wikilinks]] sparingly in the runbook.",
    "The deploy follows [[Deploy checklist|the checklist]] and ![[pipeline.png]] shows it.",
    "Read [[Runbook]] first, then ping [[Sam]].",
]


def _aliases(vault: Path, rel: str) -> list[str]:
    return list(parse_note_text((vault / rel).read_text(encoding="utf-8")).metadata["aliases"])


def test_an_alias_picked_in_link_suggestions_makes_one_working_link(tmp_path: Path) -> None:
    store, vault = open_store(tmp_path / "stm"), tmp_path / "vault"
    with ObsidianNoteSink(vault, entity_notes=False) as sink:
        rels = [
            promote_memory(store, sink, store.save(s, now=NOW).id, now=NOW, force=True).path
            for s in SENTENCES
        ]
    # What Obsidian writes when a person picks each note by its alias.
    picked = [f"[[{Path(rel).stem}|{alias}]]" for rel in rels for alias in _aliases(vault, rel)]
    (vault / "Linker.md").write_text("\n\n".join(picked) + "\n", encoding="utf-8")

    ot = Vault(vault).connect().gather()
    assert ot.get_wikilinks("Linker") == [Path(rel).stem for rel in rels]
    assert not any("[[" in p[2:] or "]]" in p[:-2] for p in picked)  # one link each
    assert [a for rel in rels for a in _aliases(vault, rel)] == [
        "Use wikilinks sparingly in the runbook.",
        "The deploy follows the checklist and pipeline.png shows it.",
        "Read Runbook first, then ping Sam.",
    ]


def test_an_update_replaces_the_alias_an_older_version_wrote(tmp_path: Path) -> None:
    store, vault = open_store(tmp_path / "stm"), tmp_path / "vault"
    m = store.save(SENTENCES[0], now=NOW)
    with ObsidianNoteSink(vault, entity_notes=False) as sink:
        rel = promote_memory(store, sink, m.id, now=NOW, force=True).path
    path = vault / rel
    parsed = parse_note_text(path.read_text(encoding="utf-8"))
    older = {**parsed.metadata, "aliases": [SENTENCES[0], "Runbook links"]}
    path.write_text(note_text(older, parsed.body), encoding="utf-8")
    store.update(m.id, use_count=3)
    with ObsidianNoteSink(vault, entity_notes=False) as sink:
        promote_memory(store, sink, m.id, now=NOW + 60, force=True)
    assert _aliases(vault, rel) == ["Use wikilinks sparingly in the runbook.", "Runbook links"]
