"""What other processes write to the store, a consolidation run's merges among them, is embedded
by a running MCP server in the background (mcp_server/store_pickup.py), without a tool call: the
run loads no model for the texts its merges made, and neither does the next run. Real
processes: the server over stdio, each run in a process of its own (the flow, a Prefect test
server), the real model."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_helpers import PYTHON, make_settings, payload, server_env
from merged_texts import NEW, TEXTS, cached_keys, embed_in_cache

from cortexgraph.mcp_server.state import ServerState
from cortexgraph.mcp_server.store_pickup import AppendedLines
from cortexgraph.storage import open_store
from cortexgraph.storage.embedding_cache import text_key

pytestmark = pytest.mark.slow

# A consolidation run in a process of its own (the flow, as the CLI and a deployment run it):
# what it merged, what it looked at, and whether an embedding model was loaded in it.
RUN = """
import json
from cortexgraph.flows.consolidation import run_pipeline
from cortexgraph.flows.pipeline_setup import RunOptions
from cortexgraph.settings import Settings
from cortexgraph.storage.embeddings import SentenceTransformerEmbedder
from cortexgraph.storage.onnx_embedder import OnnxEmbedder

report = run_pipeline(Settings(), RunOptions())
print(json.dumps({
    "merged": [o.content for o in report.reports["merge"].outcomes if o.status == "merged"],
    "changed": None if report.scope is None else len(report.scope.changed),
    "compared": report.reports["cluster"].scanned,
    "model_loaded": bool(OnnxEmbedder._sessions or SentenceTransformerEmbedder._shared),
    "notes": list(report.notes),
}))
"""


def _seeded(store_dir: Path) -> None:
    """The memories, their vectors in the cache (as the server's background embedder leaves
    its saves): a run finds every text it compares."""
    store = open_store(store_dir)
    for text in TEXTS:
        store.save(text, now=time.time() - 3600)
    embed_in_cache(store_dir, TEXTS)


def _run(env: dict[str, str], cwd: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", RUN], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


async def _background_done(client: Client, timeout: float = 120.0) -> list[int]:
    """``embeddings_pending`` read until 0 (what a benchmark waits for), every reading."""
    seen: list[int] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stats = json.loads((await client.read_resource("cortexgraph://stats")).contents[0].text)
        seen.append(int(stats["embeddings_pending"]))
        if not seen[-1]:
            return seen
        await anyio.sleep(0.2)
    raise AssertionError(f"background embedding not done within {timeout} s: {seen[-5:]}")


def test_a_server_embeds_what_a_run_merged_and_neither_run_loads_a_model(prefect_harness, tmp_path):
    store_dir = tmp_path / "stm"
    _seeded(store_dir)
    on = {"CORTEXGRAPH_ENABLE_EMBEDDINGS": "true"}
    params = StdioServerParameters(
        command=PYTHON,
        args=["-m", "cortexgraph.mcp_server"],
        env=server_env(tmp_path, **on),
        cwd=str(tmp_path),
    )
    run_env = server_env(tmp_path, CORTEXGRAPH_BEADS_ENABLED="false", **on)

    async def go() -> tuple[dict, set[str], dict]:
        with anyio.fail_after(600):
            async with Client(params) as client:
                await _background_done(client)  # the store is open, nothing to do
                first = await anyio.to_thread.run_sync(_run, run_env, tmp_path)
                # No tool call from here on: the server looks at the store's file by itself.
                await _background_done(client)
                picked = await anyio.to_thread.run_sync(cached_keys, store_dir)
                saved = payload(await client.call_tool("save_memory", {"content": NEW}))
                assert saved["success"]
                await _background_done(client)
                second = await anyio.to_thread.run_sync(_run, run_env, tmp_path)
                return first, picked, second

    first, picked, second = anyio.run(go)
    assert first["merged"], first["notes"]
    assert first["model_loaded"] is False, first["notes"]
    assert any("left to embed" in n for n in first["notes"])
    # The run loaded no model, so the merged text's vector on disk is the server's.
    assert {text_key(t) for t in first["merged"]} <= picked
    # The next run compares the new memory with the whole store, merged memory included:
    # every vector is there, no model is loaded.
    assert second["changed"] and second["compared"] > 1
    assert second["model_loaded"] is False, second["notes"]


def test_what_another_process_saves_is_embedded_without_a_tool_call(tmp_path):
    settings = make_settings(tmp_path, enable_embeddings=True)
    state = ServerState(settings)
    _ = state.store  # opened: the background embedder follows the store's file
    dense = state.dense
    assert dense is not None
    other = open_store(settings.storage_path)  # as a hook or a run in another process
    try:
        saved = other.save("Ravi moved the standup to ten on Mondays")
        deadline = time.monotonic() + 120
        while dense.background_pending and time.monotonic() < deadline:
            time.sleep(0.05)
        assert dense.background_pending == 0
        assert text_key(saved.content) in cached_keys(settings.storage_path)
        embedded = dense.cache.embedded
        # Another memory whose text the cache holds already: picked up, nothing embedded.
        again = other.save("Ravi moved the standup to ten on Mondays", tags=["again"])
        deadline = time.monotonic() + 30
        while dense.background_pending and time.monotonic() < deadline:
            time.sleep(0.05)
        assert dense.background_pending == 0
        assert state.store.find(again.id) is not None
        assert dense.cache.embedded == embedded
    finally:
        state.save_embeddings()  # at shutdown: the embedder's thread stops
    assert not [t for t in threading.enumerate() if t.name == "cortexgraph-embed"]


def test_the_appended_lines_are_read_once_whole_and_a_rewrite_adds_none(tmp_path):
    store = open_store(tmp_path)
    first = store.save("a first memory")
    lines = AppendedLines(tmp_path / "memories.jsonl", tmp_path / ".cortexgraph.generation")

    def look() -> set[str]:
        ids, seen = lines.take()
        seen()
        return ids

    assert not lines.unseen() and look() == set()
    second = store.save("a second memory")
    assert lines.unseen()
    ids, _ = lines.take()
    assert ids == {second.id} and lines.unseen()  # until they are handed on
    memories = tmp_path / "memories.jsonl"
    whole = memories.read_bytes()
    memories.write_bytes(whole[:-5])  # a writer mid-line: read at the next look
    assert look() == set() and lines.unseen()
    memories.write_bytes(whole)
    assert look() == {second.id}
    assert not lines.unseen() and look() == set()
    store.update(first.id, tags=["edited"])
    store.compact()  # a rewrite: the look starts again from the new file's end
    assert look() == set() and not lines.unseen()
    third = store.save("a third memory")
    assert look() == {third.id}


def test_a_store_made_after_the_server_started_is_read_from_its_first_line(tmp_path):
    lines = AppendedLines(tmp_path / "memories.jsonl", tmp_path / ".cortexgraph.generation")
    saved = open_store(tmp_path).save("the first memory of a new store")
    assert lines.take()[0] == {saved.id}


def test_the_look_waits_until_the_writer_is_done(tmp_path):
    store = open_store(tmp_path)
    lines = AppendedLines(tmp_path / "memories.jsonl", tmp_path / ".cortexgraph.generation")
    assert not lines.settled(5.0, now=100.0)  # nothing written
    store.save("a run's first merge")
    assert not lines.settled(5.0, now=100.0)
    assert not lines.settled(5.0, now=104.0)
    store.save("its second merge")  # still writing
    assert not lines.settled(5.0, now=106.0)
    assert lines.settled(5.0, now=111.0)
