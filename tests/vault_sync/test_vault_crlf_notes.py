"""Notes with Windows line endings (a git checkout with autocrlf, a sync tool, an editor on
Windows). The writers read notes as text (universal newlines) and found them; the vault index
reads bytes, and its frontmatter's closing "---\\r" was not seen: the note's id, title, tags
and aliases were lost to search_unified, the YAML became body text, and `vault check`
called the note's frontmatter broken."""

from __future__ import annotations

from pathlib import Path

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import LTMIndex, ObsidianNoteSink, parse_note_text, promote_memory
from cortexgraph.vault_sync.note_body import body_of
from cortexgraph.vault_sync.vault_check import check_vault

NOW = 1_750_000_000.0


def test_frontmatter_closed_by_a_crlf_line_is_read() -> None:
    parsed = parse_note_text("---\r\ntitle: Trip\r\ntags: [travel]\r\n---\r\nFly on Friday.\r\n")
    assert parsed.frontmatter_error is None
    assert parsed.metadata == {"title": "Trip", "tags": ["travel"]}
    assert parsed.body == "Fly on Friday.\r\n"
    assert body_of("---\r\ntitle: Trip\r\n---\r\nFly on Friday.\r\n") == "Fly on Friday.\r\n"


def test_the_index_reads_a_promoted_note_with_crlf_line_endings(tmp_path: Path) -> None:
    store, vault = InMemoryStore(), tmp_path / "vault"
    vault.mkdir()
    m = store.save(
        "Deploys happen on Tuesdays", tags=["ops"], extra={"title": "Deploy day"}, now=NOW
    )
    rel = promote_memory(
        store, ObsidianNoteSink(vault, "cortexgraph"), m.id, now=NOW, force=True
    ).path
    note = vault / rel
    note.write_bytes(note.read_bytes().replace(b"\n", b"\r\n"))

    index = LTMIndex.open(vault)
    record = index.get(rel)
    assert record.frontmatter_error is None
    assert (record.memory_id, record.title, record.tags) == (m.id, "Deploy day", ("ops",))
    assert "title:" not in record.content  # the YAML is not read as the note's text
    assert [i for i in check_vault(index) if i.path == rel] == []
