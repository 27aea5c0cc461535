"""A promoted note a person saved in another encoding than UTF-8 (an editor on Windows writing
cp1252: "Café" as the byte 0xE9). The note is found by its id, and updating it read it as
UTF-8 and raised UnicodeDecodeError: promote_memory answered only "Error executing tool
promote_memory", and a run's refresh of the note failed the same way. The note is left byte
for byte as the person saved it; our newer version goes to a conflict copy, as for a note
whose frontmatter the person broke.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import Client
from mcp_common import make_settings, payload

from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import ObsidianNoteSink, parse_note_text, promote_memory

NOW = 1_750_000_000.0
ADDED = "Café near the hotel.\n"


def _resave_in_cp1252(note: Path) -> bytes:
    data = (note.read_text("utf-8") + ADDED).encode("cp1252")
    note.write_bytes(data)
    return data


def test_an_update_leaves_the_note_as_it_is_and_writes_a_conflict_copy(tmp_path: Path) -> None:
    store, vault = InMemoryStore(), tmp_path / "vault"
    vault.mkdir()
    other = store.save("Porto wine tasting on the second day", now=NOW)
    m = store.save("Lisbon trip booked for May", now=NOW)
    store.add_relation(m.id, other.id, "related", now=NOW)
    promote_memory(store, ObsidianNoteSink(vault), other.id, now=NOW, force=True)
    rel = promote_memory(store, ObsidianNoteSink(vault), m.id, now=NOW, force=True).path
    note = vault / rel
    saved = _resave_in_cp1252(note)

    store.update(m.id, content="Lisbon trip booked for June")
    sink = ObsidianNoteSink(vault)
    out = promote_memory(store, sink, m.id, now=NOW + 5, force=True)
    assert out.path == rel and out.conflict_path is not None
    assert note.read_bytes() == saved
    assert "June" in parse_note_text((vault / out.conflict_path).read_text("utf-8")).body

    memory = store.get(m.id)
    changed = sink.refresh_note(
        memory, related=[store.get(other.id)], relations=store.relations(m.id), now=NOW + 9
    )
    assert changed is None and note.read_bytes() == saved


def test_promote_memory_over_mcp_answers(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)

    async def go() -> dict:
        async with Client(build_server(settings)) as client:
            saved = payload(
                await client.call_tool("save_memory", {"content": "Lisbon trip booked for May"})
            )
            args = {"memory_id": saved["memory_id"], "force": True}
            first = payload(await client.call_tool("promote_memory", args))
            _resave_in_cp1252(tmp_path / "vault" / first["results"][0]["path"])
            await client.call_tool("touch_memory", {"memory_id": saved["memory_id"]})
            return payload(await client.call_tool("promote_memory", args))

    (result,) = anyio.run(go)["results"]
    assert result["promoted"] and result["conflict_path"]


def test_an_entity_note_in_another_encoding_does_not_stop_promotions(tmp_path: Path) -> None:
    """Its list could not be read to add the new note's link: every promotion of a memory
    naming that entity failed (UnicodeDecodeError, not an OSError: an untyped crash). The
    entity note stays as the person saved it; the promotion goes ahead."""
    store, vault = InMemoryStore(), tmp_path / "vault"
    vault.mkdir()
    first = store.save("Lisbon trip booked for May", entities=["Lisbon"], now=NOW)
    promote_memory(store, ObsidianNoteSink(vault), first.id, now=NOW, force=True)
    saved = _resave_in_cp1252(vault / "cortexgraph/entities/Lisbon.md")

    second = store.save("Lisbon hotel is near the river", entities=["Lisbon"], now=NOW)
    out = promote_memory(store, ObsidianNoteSink(vault), second.id, now=NOW + 5, force=True)
    assert out.promoted and (vault / out.path).is_file()
    assert (vault / "cortexgraph/entities/Lisbon.md").read_bytes() == saved
