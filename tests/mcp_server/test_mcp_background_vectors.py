"""The server's background embedder saves each batch's vectors while the server runs (Claude
Desktop keeps it up for days): a consolidation run in another process an hour later finds them
on disk. ``cortexgraph://stats`` says how many saves still wait for theirs, and whether their
entities are still to be read. The real model and spaCy."""

from __future__ import annotations

import json
import time

import anyio
from mcp import Client
from mcp_common import make_settings, payload

from cortexgraph.agents.relationship_discovery import FOUND_KEY
from cortexgraph.mcp_server.app import build_server
from cortexgraph.mcp_server.entity_reading import EntityReading
from cortexgraph.storage import open_store
from cortexgraph.storage.embedding_cache import text_key
from cortexgraph.storage.embedding_files import CacheFiles

LINES = [
    "Ana moved the billing ledger to Postgres last week",
    "The nightly migrations run with Alembic at 2am",
    "Deploys are frozen during the last week of the quarter",
]


async def _pending(client: Client) -> int:
    stats = json.loads((await client.read_resource("cortexgraph://stats")).contents[0].text)
    assert stats["entities_pending"] in (True, False)  # the entity reading's, beside it
    return int(stats["embeddings_pending"])


def test_saved_vectors_are_on_disk_while_the_server_still_runs(tmp_path):
    async def go() -> tuple[list[int], set[str]]:
        settings = make_settings(tmp_path, enable_embeddings=True)
        async with Client(build_server(settings)) as client:
            for line in LINES:
                assert payload(await client.call_tool("save_memory", {"content": line}))["success"]
            pending = [await _pending(client)]
            deadline = time.monotonic() + 120
            while pending[-1] and time.monotonic() < deadline:
                await anyio.sleep(0.1)
                pending.append(await _pending(client))
            # Still inside the session: what another process would read from the files now.
            [npz] = (tmp_path / "stm").glob(".embeddings-*.npz")
            return pending, set(CacheFiles(npz).read())

    pending, on_disk = anyio.run(go)
    assert pending[-1] == 0
    # Each content alone, as a consolidation run embeds it (the search's rows hold the line
    # saved before too): none is left for the run to embed.
    assert {text_key(line) for line in LINES} <= on_disk


def test_the_entity_reading_is_pending_from_a_save_until_its_child_has_read(tmp_path):
    """What ``entities_pending`` in cortexgraph://stats reports: due from the save on (the
    child starts once saves stop), running, then done with the memory read."""
    settings = make_settings(
        tmp_path,
        entity_reading_after_saves=True,
        entity_reading_quiet_s=0.5,
        entity_reading_min_gap_s=0,
    )
    memory = open_store(settings.storage_path).save("Caroline met Melanie in Boston.")
    reading = EntityReading(settings)
    assert not reading.pending
    reading.saved()
    seen = [reading.pending]
    deadline = time.monotonic() + 120
    while seen[-1] and time.monotonic() < deadline:
        time.sleep(0.05)
        seen.append(reading.pending)
    reading.close()
    assert seen[0] and not seen[-1] and reading.started == 1
    assert FOUND_KEY in open_store(settings.storage_path).get(memory.id).meta.extra


FRESH = [
    f"{who} brought {what} to the {where}"
    for who, what, where in [
        ("Ana", "lemon cake", "picnic"),
        ("Ben", "a chess set", "library"),
        ("Caro", "two kayaks", "lake"),
        ("Dev", "his violin", "wedding"),
        ("Eli", "spare tyres", "garage"),
        ("Fay", "tomato seedlings", "allotment"),
    ]
    for _ in range(4)
]


def test_a_search_right_after_a_few_saves_ranks_every_one_by_its_meaning(tmp_path):
    """The background embedder is still at the saves when the search comes. Its backlog is
    short (search_embedding_wait_s at its measured pace), so the search waits for it: before,
    the saves that share no word with the question were left to BM25, which finds none."""

    async def go() -> tuple[list[str], set[str]]:
        settings = make_settings(
            tmp_path,
            enable_embeddings=True,
            entity_reading_after_saves=False,
            search_embedding_wait_s=30,  # any pace: the bound is not what is tested here
        )
        async with Client(build_server(settings)) as client:
            # The first batch loads the model, the second measures the pace.
            for line in LINES[:2]:
                assert payload(await client.call_tool("save_memory", {"content": line}))["success"]
            deadline = time.monotonic() + 120
            while await _pending(client) and time.monotonic() < deadline:
                await anyio.sleep(0.1)
            fresh = []
            for line in FRESH:
                saved = payload(await client.call_tool("save_memory", {"content": line}))
                fresh.append(saved["memory_id"])
            found = payload(await client.call_tool("search_memory", {"query": "qwzx", "top_k": 50}))
            return fresh, {r["id"] for r in found["results"]}

    fresh, found = anyio.run(go)
    assert set(fresh) <= found
