"""A person's own notes may carry an ``id`` in their frontmatter for their own purposes
(a Zettelkasten number, "travel/2024 #3", a list). One such note made every search_unified
call fail with "Invalid input: malformed memory id '...'", naming an id the caller never gave:
the index passed the note's id to the store as a memory id. An id that cannot be a memory's is
the person's: the note is theirs, found by its words like any other."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_common import make_settings, payload

from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store
from cortexgraph.vault_sync import LTMIndex


@pytest.mark.parametrize("their_id", ["travel/2024 #3", "[1, 2]", "{a: 1}", "'x y'"])
def test_a_persons_own_id_is_not_taken_for_a_memory_id(tmp_path: Path, their_id: str) -> None:
    settings = make_settings(tmp_path)
    vault = tmp_path / "vault"
    (vault / "Trip.md").write_text(f"---\nid: {their_id}\ntitle: Trip\n---\nFly to Lisbon.\n")
    saved = open_store(tmp_path / "stm").save("The Lisbon hotel is booked for May")

    assert LTMIndex.open(vault).get("Trip.md").memory_id is None

    async def go() -> dict:
        async with Client(build_server(settings)) as client:
            return payload(
                await client.call_tool("search_unified", {"query": "Lisbon", "verbose": True})
            )

    found = anyio.run(go)
    assert {(r["source"], r["title"]) for r in found["results"]} >= {("ltm", "Trip")}
    assert saved.id in {r.get("memory_id") for r in found["results"]}
