"""The server's background embedder saves each batch's vectors while the server runs (Claude
Desktop keeps it up for days): a consolidation run in another process an hour later finds them
on disk. ``cortexgraph://stats`` says how many saves still wait for theirs. The real model."""

from __future__ import annotations

import json
import time

import anyio
from mcp import Client
from mcp_common import make_settings, payload

from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage.embedding_cache import text_key
from cortexgraph.storage.embedding_files import CacheFiles

LINES = [
    "Ana moved the billing ledger to Postgres last week",
    "The nightly migrations run with Alembic at 2am",
    "Deploys are frozen during the last week of the quarter",
]


async def _pending(client: Client) -> int:
    stats = await client.read_resource("cortexgraph://stats")
    return int(json.loads(stats.contents[0].text)["embeddings_pending"])


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
