"""The MCP server rewrites the store's load snapshot itself once its writes settle
(mcp_server/snapshot_upkeep.py), so the next process to open the store (the hourly run)
finds a snapshot covering every line and rewrites nothing. The real server over stdio."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_helpers import PYTHON, make_settings, payload, server_env

from cortexgraph.mcp_server import snapshot_upkeep
from cortexgraph.mcp_server.snapshot_upkeep import keep_snapshots_fresh, snapshot_pending
from cortexgraph.mcp_server.state import ServerState
from cortexgraph.storage import JSONLStore, StoreConfig, open_store
from cortexgraph.storage.index_snapshot import SNAPSHOT_NAME, snapshot_size

pytestmark = pytest.mark.slow

RULES = repr(StoreConfig().record_limits())  # what a snapshot's header names
FILLER = "the long-running notes of a busy assistant, " * 10  # ~450 bytes a memory


def _big_store(store_dir: Path) -> None:
    """Past the 1 MB a store needs for a snapshot, and the snapshot written (a cold open)."""
    store = open_store(store_dir)
    with store.writing():
        for i in range(1_800):
            store.save(f"note {i}: {FILLER}", tags=["seed"], now=time.time() - 86_400)
    assert open_store(store_dir).snapshot_tails()[SNAPSHOT_NAME] == 0
    assert (store_dir / SNAPSHOT_NAME).exists()


async def _stats(client: Client) -> dict:
    return json.loads((await client.read_resource("cortexgraph://stats")).contents[0].text)


def test_the_server_refreshes_the_snapshot_once_its_saves_settle(tmp_path: Path) -> None:
    store_dir = tmp_path / "stm"
    _big_store(store_dir)
    before = snapshot_size(store_dir, RULES)
    env = server_env(
        tmp_path,
        CORTEXGRAPH_SNAPSHOT_REFRESH_QUIET_S="1.5",
        CORTEXGRAPH_SNAPSHOT_REFRESH_TAIL_BYTES="1000",
    )
    params = StdioServerParameters(
        command=PYTHON, args=["-m", "cortexgraph.mcp_server"], env=env, cwd=str(tmp_path)
    )

    async def go() -> tuple[list[bool], list[str], int]:
        with anyio.fail_after(120):
            async with Client(params) as client:
                idle = (await _stats(client))["snapshot_pending"]  # nothing past the snapshot
                ids = []
                for i in range(6):
                    saved = await client.call_tool(
                        "save_memory", {"content": f"Ana moved the ledger to Postgres, step {i}"}
                    )
                    ids.append(payload(saved)["memory_id"])
                seen = [idle]
                while True:
                    seen.append((await _stats(client))["snapshot_pending"])
                    if not seen[-1]:
                        break
                    await anyio.sleep(0.2)
                # still inside the session: what another process opens now
                return seen, ids, snapshot_size(store_dir, RULES)

    seen, ids, covered = anyio.run(go)
    assert seen[0] is False and seen[1] is True and seen[-1] is False
    size = (store_dir / "memories.jsonl").stat().st_size
    assert before < covered == size
    reopened = JSONLStore(store_dir)
    assert reopened._view_from_snapshot and reopened.snapshot_tails()[SNAPSHOT_NAME] == 0
    assert all(i in reopened for i in ids)


def test_switched_off_the_server_leaves_the_snapshot_to_the_next_open(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, snapshot_refresh_after_writes=False)
    state = ServerState(settings)

    async def go() -> None:
        with anyio.fail_after(10):
            await keep_snapshots_fresh(state)  # returns at once: no look is ever made

    anyio.run(go)
    assert snapshot_pending(state) is False


def test_a_refresh_that_fails_stops_the_upkeep_not_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The task runs in the lifespan's task group: an exception out of it would end the
    server. A bug in a refresh is logged and ends the upkeep alone."""
    state = ServerState(make_settings(tmp_path, snapshot_refresh_quiet_s=0))
    state.store.save("something to look at")
    calls: list[int] = []

    def broken(self: JSONLStore, min_tail_bytes: int) -> list[str]:
        calls.append(min_tail_bytes)
        raise RuntimeError("a bug")

    monkeypatch.setattr(JSONLStore, "refresh_snapshots", broken)
    monkeypatch.setattr(snapshot_upkeep, "LOOK_S", 0.01)

    async def go() -> None:
        with anyio.fail_after(30):
            await keep_snapshots_fresh(state)  # returns: the upkeep has stopped

    anyio.run(go)
    assert calls and "snapshot refresh stopped" in caplog.text


def test_the_server_reads_the_search_index_while_it_starts(tmp_path: Path) -> None:
    _big_store(tmp_path / "stm")
    assert not open_store(tmp_path / "stm").search_index_loaded  # what a plain open leaves
    state = ServerState(make_settings(tmp_path))
    state.open_in_background()
    assert state._thread is not None
    state._thread.join(60)  # the opening thread reads it after the store has opened
    assert state.store.search_index_loaded
    assert state.store.search("note 7", top_k=1)[0].memory.content.startswith("note 7:")
