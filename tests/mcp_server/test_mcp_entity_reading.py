"""After saves through the MCP server, a child process reads the new memories' entities
(mcp_server/entity_reading.py): the next consolidation run finds them read and loads no spaCy.
Real processes throughout: the server over stdio, the child, a run in a process of its own."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_helpers import PYTHON, make_settings, payload, server_env

from cortexgraph.activation.entity_batch import batch_entity_finder
from cortexgraph.agents.entity_reading import FOUND_KEY
from cortexgraph.agents.relationship_discovery import RelationshipDiscovery
from cortexgraph.mcp_server.entity_reading import (
    SERVICE,
    EntityReading,
    read_entities_soon,
    spacy_installed,
)
from cortexgraph.mcp_server.state import ServerState
from cortexgraph.settings import Settings
from cortexgraph.storage import JSONLStore, open_store

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not spacy_installed(), reason="spaCy (the full extra) is not installed"),
]

TEXTS = [
    "Caroline: I went to the LGBTQ support group in Boston with Melanie yesterday.",
    "Melanie: We adopted a kitten last week, we call her Luna.",
    "We chose PostgreSQL 16 for the billing service at Acme Corp in Berlin.",
    "Jon flew to Tokyo to meet the Sony team about the camera contract.",
    "The quarterly report for Globex is due on Friday; Priya owns it.",
]
ON = {
    "CORTEXGRAPH_ENTITY_READING_AFTER_SAVES": "true",
    "CORTEXGRAPH_ENTITY_READING_QUIET_S": "0.5",
    "CORTEXGRAPH_ENTITY_READING_MIN_GAP_S": "0",
}
# A following run in a process of its own, through the MCP tool: its relations summary, and
# whether spaCy was imported.
FOLLOWING_RUN = """
import json, sys, anyio
from mcp import Client
from cortexgraph.mcp_server.app import build_server
from cortexgraph.settings import Settings

async def go():
    async with Client(build_server(Settings())) as client:
        return await client.call_tool("run_consolidation", {"dry_run": False})

out = json.loads(anyio.run(go).content[0].text)
print(json.dumps({"relations": out["summaries"]["relations"], "spacy": "spacy" in sys.modules}))
"""


def _wait_until_read(store: JSONLStore, ids: list[str], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(FOUND_KEY in store.get(i).meta.extra for i in ids):
            return
        time.sleep(0.2)
    raise AssertionError(f"entities not read within {timeout} s")


def _as_saved(store_dir: Path, twin_dir: Path) -> JSONLStore:
    """A store holding each memory as it was saved: its first line (the files are append-only)."""
    first: dict[str, str] = {}
    for line in (store_dir / "memories.jsonl").read_text(encoding="utf-8").splitlines():
        first.setdefault(json.loads(line)["id"], line)
    twin_dir.mkdir()
    (twin_dir / "memories.jsonl").write_text("\n".join(first.values()) + "\n", encoding="utf-8")
    return open_store(twin_dir)


def test_saves_through_stdio_are_read_in_the_background_and_the_next_run_loads_no_spacy(
    tmp_path,
):
    params = StdioServerParameters(
        command=PYTHON,
        args=["-m", "cortexgraph.mcp_server"],
        env=server_env(tmp_path, **ON),
        cwd=str(tmp_path),
    )

    async def save_all() -> list[str]:
        with anyio.fail_after(120):
            async with Client(params) as client:
                ids = [
                    payload(await client.call_tool("save_memory", {"content": t}))["memory_id"]
                    for t in TEXTS
                ]
                # the server keeps running meanwhile: the child reads after the saves stop
                view = await anyio.to_thread.run_sync(open_store, tmp_path / "stm")
                await anyio.to_thread.run_sync(_wait_until_read, view, ids)
                return ids

    ids = anyio.run(save_all)
    store = open_store(tmp_path / "stm")
    # Exactly what the run's entity step writes, with the run's finder, from the saved records.
    twin = _as_saved(tmp_path / "stm", tmp_path / "twin")
    finder = batch_entity_finder(Settings().spacy_model)
    assert RelationshipDiscovery(twin, entity_finder=finder).read_entities() == (
        len(ids),
        "spacy+rules",
    )
    for i in ids:
        read, expected = store.get(i), twin.get(i)
        assert (read.entities, read.meta.extra) == (expected.entities, expected.meta.extra)
    assert store.get(ids[0]).mentions  # a transcript line's names are its mentions
    assert "berlin" in store.get(ids[2]).entities  # spaCy's place, beyond the rules

    env = server_env(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", FOLLOWING_RUN],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(done.stdout.strip().splitlines()[-1])
    assert "entities read in 0 (none)" in run["relations"]
    assert run["spacy"] is False


def _child(settings: Settings) -> subprocess.Popen[bytes]:
    child = subprocess.Popen(
        [sys.executable, "-m", "cortexgraph.mcp_server.entity_reading"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdin is not None
    child.stdin.write(settings.model_dump_json(exclude_unset=True).encode())
    child.stdin.close()
    return child


@pytest.mark.timeout(300)  # children that never finish fail here, not by a clock in the test
def test_children_and_a_writer_in_another_process_lose_nothing(tmp_path):
    # Two children read at once (one stands for a run's entity step: the same code) while
    # this process, as the server does, keeps touching those memories and saving new ones.
    settings = make_settings(tmp_path)
    server = open_store(settings.storage_path)
    ids = [server.save(f"{t} (note {k})").id for k in range(8) for t in TEXTS]
    touches = dict.fromkeys(ids, 0)
    children = [_child(settings), _child(settings)]
    saved_meanwhile = []
    k = 0
    while any(c.poll() is None for c in children):
        i = ids[k % len(ids)]
        server.touch(i)
        touches[i] += 1
        if k % 10 == 0:
            saved_meanwhile.append(server.save(f"Ravi moved to Lisbon, note {k}").id)
        k += 1
        time.sleep(0.01)  # a busy server, not one that saves more than a run reads
    for c in children:
        assert c.returncode == 0, c.stderr.read().decode()[-3000:] if c.stderr else ""
    assert k > 0
    for view in (server, open_store(settings.storage_path)):  # this view caught up, a new one
        for i in ids:
            m = view.get(i)
            assert m.meta.extra[FOUND_KEY] == "spacy+rules"
            assert m.use_count == touches[i]
        assert all(view.get(i) is not None for i in saved_meanwhile)
        assert len(view) == len(ids) + len(saved_meanwhile)


def test_shutdown_stops_a_running_child_and_starts_no_other(tmp_path):
    settings = make_settings(
        tmp_path,
        entity_reading_after_saves=True,
        entity_reading_quiet_s=0,
        entity_reading_min_gap_s=0,
    )
    open_store(settings.storage_path).save("Caroline: we met Melanie in Boston.")
    reading = EntityReading(settings)
    reading.saved()
    deadline = time.monotonic() + 30
    while reading._child is None and time.monotonic() < deadline:
        time.sleep(0.01)
    child = reading._child
    assert child is not None
    reading.close()
    assert child.poll() is not None  # stopped (or done), waited for: no process left
    reading.saved()
    time.sleep(0.2)
    assert reading.started == 1 and reading._child is None


def test_no_reader_when_turned_off(tmp_path):
    state = ServerState(make_settings(tmp_path, entity_reading_after_saves=False))
    read_entities_soon(state)
    assert SERVICE not in state._services
