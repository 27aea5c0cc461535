"""The alias a promoted note gets is the memory's first sentence, so that Obsidian's search and
link suggestions find the note by its words. It had no length limit: a memory whose first
sentence ran for thousands of characters (a pasted log, a paragraph with no full stop) put all
of them in ``aliases:``. It is now cut at a word boundary, with an ellipsis."""

from __future__ import annotations

from pathlib import Path

from cortexgraph.storage import open_store
from cortexgraph.vault_sync import ObsidianNoteSink, parse_note_text, promote_memory
from cortexgraph.vault_sync.note_format import note_text
from cortexgraph.vault_sync.note_names import MAX_ALIAS_CHARS

NOW = 1_750_000_000.0
WORDS = "the ledger export runs after the nightly backup and writes one file per tenant"
LONG = " ".join([WORDS] * 60)  # one sentence, ~4,800 characters, no full stop


def _aliases(vault: Path, rel: str) -> list[str]:
    return list(parse_note_text((vault / rel).read_text(encoding="utf-8")).metadata["aliases"])


def test_a_long_first_sentence_gives_a_short_alias_cut_at_a_word(tmp_path: Path) -> None:
    store, vault = open_store(tmp_path / "stm"), tmp_path / "vault"
    m = store.save(LONG + ". A second sentence.", now=NOW)
    with ObsidianNoteSink(vault) as sink:
        rel = promote_memory(store, sink, m.id, now=NOW, force=True).path
    (alias,) = _aliases(vault, rel)
    assert len(alias) <= MAX_ALIAS_CHARS < len(LONG)
    assert alias.endswith("…")
    kept = alias[:-1]
    assert LONG.startswith(kept) and LONG[len(kept)] == " "  # whole words only
    assert len(kept) > MAX_ALIAS_CHARS // 2


def test_a_sentence_of_ordinary_length_stays_whole(tmp_path: Path) -> None:
    store, vault = open_store(tmp_path / "stm"), tmp_path / "vault"
    sentence = "Backfill finished 24 monthly partitions and found 3 mismatches in March"
    m = store.save(sentence + ". More detail follows here.", now=NOW)
    with ObsidianNoteSink(vault) as sink:
        rel = promote_memory(store, sink, m.id, now=NOW, force=True).path
    assert _aliases(vault, rel) == [sentence + "."]


def test_an_update_replaces_the_uncut_alias_an_older_version_wrote(tmp_path: Path) -> None:
    """A note written before the cut carries the whole sentence as its alias; the next update
    writes the cut one, and a person's own alias stays."""
    store, vault = open_store(tmp_path / "stm"), tmp_path / "vault"
    m = store.save(LONG, now=NOW)
    with ObsidianNoteSink(vault) as sink:
        rel = promote_memory(store, sink, m.id, now=NOW, force=True).path
    (cut,) = _aliases(vault, rel)
    path = vault / rel
    parsed = parse_note_text(path.read_text(encoding="utf-8"))
    older = {**parsed.metadata, "aliases": [LONG, "Ledger export"]}
    path.write_text(note_text(older, parsed.body), encoding="utf-8")
    assert _aliases(vault, rel) == [LONG, "Ledger export"]
    store.update(m.id, use_count=3)
    with ObsidianNoteSink(vault) as sink:
        assert promote_memory(store, sink, m.id, now=NOW + 60, force=True).path == rel
    assert _aliases(vault, rel) == [cut, "Ledger export"]
