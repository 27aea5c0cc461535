"""Frontmatter a person typed that YAML parses but cannot turn into values: a date that does
not exist ("2024-02-30", "2024-13-01"). PyYAML raises ValueError, not YAMLError, for it; it
reached every reader of the vault (the index, the note finder, search_unified) as a crash.
The note is read with such a date kept as the text it is, and nothing the person wrote is lost.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import LTMIndex, ObsidianNoteSink, parse_note_text, promote_memory

NOW = 1_750_000_000.0


@pytest.mark.parametrize("date", ["2024-02-30", "2024-13-01", "2024-01-01 25:00:00"])
def test_an_impossible_date_is_read_as_text(date: str) -> None:
    parsed = parse_note_text(f"---\ntitle: Trip\nreviewed: {date}\n---\nWe fly on Friday.\n")
    assert parsed.frontmatter_error is None
    assert parsed.metadata == {"title": "Trip", "reviewed": date}
    assert parsed.body == "We fly on Friday.\n"


def test_a_bad_explicit_tag_is_broken_yaml_not_a_crash() -> None:
    text = "---\nrating: !!int five\n---\nbody\n"
    parsed = parse_note_text(text)
    assert parsed.frontmatter_error is not None and "five" in parsed.frontmatter_error
    assert parsed.body == text  # nothing lost


def test_a_promoted_note_with_an_impossible_date_is_updated_in_place(tmp_path: Path) -> None:
    store, vault = InMemoryStore(), tmp_path / "vault"
    vault.mkdir()
    sink = ObsidianNoteSink(vault, "cortexgraph")
    m = store.save("Deploys happen on Tuesdays", now=NOW - 86400)
    rel = promote_memory(store, sink, m.id, now=NOW, force=True).path
    note = vault / rel
    note.write_text(note.read_text().replace("---\n", "---\nreviewed: 2024-02-30\n", 1))

    index = LTMIndex.open(vault)
    assert index.get(rel).memory_id == m.id  # indexed, with its id

    store.update(m.id, content="Deploys happen on Wednesdays")
    out = promote_memory(store, sink, m.id, now=NOW + 1, force=True)
    assert out.path == rel and out.conflict_path is None  # found by id, not written twice
    after = parse_note_text(note.read_text())
    assert after.metadata["reviewed"] == "2024-02-30"  # the person's field kept
    assert "Wednesdays" in after.body
    assert len(list(vault.rglob("*.md"))) == 1


def test_search_unified_over_mcp_finds_the_other_notes(tmp_path: Path) -> None:
    from mcp import Client
    from mcp_common import make_settings, payload

    from cortexgraph.mcp_server.app import build_server

    settings = make_settings(tmp_path)
    vault = tmp_path / "vault"
    (vault / "Trip.md").write_text("---\ntitle: Trip\ncreated: 2024-02-30\n---\nFly to Lisbon.\n")
    (vault / "Hotel.md").write_text("---\ntitle: Hotel\n---\nThe Lisbon hotel is booked.\n")

    async def go() -> dict:
        async with Client(build_server(settings)) as client:
            return payload(await client.call_tool("search_unified", {"query": "Lisbon"}))

    found = anyio.run(go)
    assert {r["title"] for r in found["results"]} == {"Trip", "Hotel"}
