"""vault_sync.written_notes: which entity notes count as cortexgraph's own (memory_wipe removes
those) and which a person made theirs."""

from __future__ import annotations

import pytest

from cortexgraph.storage import open_store
from cortexgraph.vault_sync.note_sink import ObsidianNoteSink
from cortexgraph.vault_sync.written_notes import remove_written_notes

NOW = 1_760_000_000.0
HOSTILE = ["C#", "x]] [[y", "a: b", "日本語", "<!-- cortexgraph:mentions -->", "null", "1.0"]


def _promote(tmp_path, facts):
    store = open_store(tmp_path / "stm")
    vault = tmp_path / "vault"
    vault.mkdir()
    sink = ObsidianNoteSink(vault, "cortexgraph")
    for i, (content, entities) in enumerate(facts):
        sink.write_note(store.save(content, entities=entities), now=NOW + i)
    sink.flush()
    return vault, vault / "cortexgraph" / "entities"


def test_untouched_entity_notes_go_whatever_the_entity_is_called(tmp_path):
    vault, entities = _promote(
        tmp_path, [(f"Fact {i} about the system", [e, "shared"]) for i, e in enumerate(HOSTILE)]
    )
    (vault / "Mine.md").write_text("my own\n")
    assert len(list(entities.iterdir())) == len(HOSTILE) + 1
    out = remove_written_notes(vault)
    assert len(out.deleted) == len(HOSTILE) and len(out.entity_deleted) == len(HOSTILE) + 1
    assert out.kept == [] and out.entity_kept == []
    assert not (vault / "cortexgraph").exists()  # the folders it emptied
    assert (vault / "Mine.md").read_text() == "my own\n"


def test_line_endings_changed_by_a_sync_tool_are_no_edit(tmp_path):
    vault, entities = _promote(tmp_path, [("The ledger uses PostgreSQL", ["PostgreSQL"])])
    note = entities / "PostgreSQL.md"
    note.write_bytes(note.read_bytes().replace(b"\n", b"\r\n"))
    assert remove_written_notes(vault).entity_deleted == ["cortexgraph/entities/PostgreSQL.md"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Mentioned in:", "Mentioned in (my words):"),  # outside the block
        ("title: PostgreSQL", "title: PostgreSQL\nstatus: reviewed"),  # a property added
        ("\n<!-- /cortexgraph", "\nmy own line\n<!-- /cortexgraph"),  # text in the block
        ("\n<!-- /cortexgraph", "\n- [[Someone else's note]]\n<!-- /cortexgraph"),  # a link
        ("]]\n<!-- /cortexgraph", "]] (the main one)\n<!-- /cortexgraph"),  # a line changed
        ("<!-- /cortexgraph:mentions -->\n", "<!-- /cortexgraph:mentions -->\n\nMore.\n"),
    ],
)
def test_an_entity_note_a_person_edited_stays_byte_for_byte(tmp_path, old, new):
    vault, entities = _promote(tmp_path, [("The ledger uses PostgreSQL", ["PostgreSQL"])])
    note = entities / "PostgreSQL.md"
    edited = note.read_text().replace(old, new, 1)
    assert edited != note.read_text()
    note.write_text(edited)
    out = remove_written_notes(vault)
    assert out.entity_deleted == [] and out.entity_kept == ["cortexgraph/entities/PostgreSQL.md"]
    assert note.read_text() == edited
    assert len(out.deleted) == 1  # the memory note itself was not edited


def test_nothing_is_touched_in_a_vault_cortexgraph_never_wrote_to(tmp_path):
    vault = tmp_path / "vault"
    (vault / "entities").mkdir(parents=True)
    (vault / "entities" / "Sam.md").write_text("---\ntitle: Sam\n---\n\n# Sam\n")
    out = remove_written_notes(vault)
    assert (out.deleted, out.entity_deleted) == ([], [])
    assert (vault / "entities" / "Sam.md").is_file() and not (vault / ".cortexgraph").exists()
