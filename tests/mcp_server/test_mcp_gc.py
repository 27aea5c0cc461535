"""gc's one rule: the MCP ``gc`` tool and the pipeline's DecayAnalyzer forget the same memories."""

from __future__ import annotations

import time

import anyio
from mcp import Client
from mcp_helpers import OLD, make_settings, payload

from cortexgraph.agents.decay_analyzer import DecayAnalyzer
from cortexgraph.agents.decay_findings import DecayAnalyzerConfig, GcMode
from cortexgraph.mcp_server.app import build_server
from cortexgraph.retrieval.core import set_core
from cortexgraph.storage import open_store
from cortexgraph.storage.models import MemoryStatus


def _seed(tmp_path) -> dict[str, str]:
    """Memories last used in 2020 (far below the forget line) that gc must or must not take."""
    store = open_store(tmp_path / "stm")

    def old(content: str, **changes) -> str:
        memory = store.save(content, tags=["old"], now=OLD)
        if changes:
            store.put(memory.with_changes(**changes))
        return memory.id

    ids = {
        "weak": old("a forgotten detail about fax machines"),
        "weak_too": old("the name of a printer on the third floor"),
        "used_often": old("the deploy checklist we kept using", use_count=3),
        "strong": old("never deploy on Fridays", strength=1.5),
        "core": old("my name is Ada"),
        "archived": old("an archived note", status=MemoryStatus.ARCHIVED),
        "fresh": store.save("we chose Postgres for billing", tags=["db"]).id,
    }
    set_core(store, ids["core"], True)
    return ids


def test_mcp_gc_and_the_decay_analyzer_forget_the_same_memories(tmp_path):
    ids = _seed(tmp_path)

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return payload(await client.call_tool("gc", {}))  # a dry run: nothing changes

    mcp = run_sync(go)
    store = open_store(tmp_path / "stm")
    analyzer = DecayAnalyzer(store, None, DecayAnalyzerConfig(gc=GcMode.ARCHIVE, open_issues=False))
    report = analyzer.run(now=time.time(), dry_run=True)

    assert set(mcp["memory_ids"]) == {ids["weak"], ids["weak_too"]}
    assert set(report.collected) == set(mcp["memory_ids"])
    assert mcp["total_affected"] == 2


def test_mcp_gc_spares_core_valuable_and_archived_memories_when_it_runs(tmp_path):
    ids = _seed(tmp_path)

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return payload(await client.call_tool("gc", {"dry_run": False}))

    done = run_sync(go)
    store = open_store(tmp_path / "stm")
    assert done["removed_count"] == 2
    assert ids["weak"] not in store and ids["weak_too"] not in store
    for kept in ("used_often", "strong", "core", "archived", "fresh"):
        assert ids[kept] in store, kept


def run_sync(fn):
    return anyio.run(fn)


def test_what_mcp_gc_deletes_can_be_brought_back(tmp_path):
    """gc(dry_run=false) deleted outright: nothing in gc's graveyard (gc-removed.jsonl), so
    undo_consolidation(action="gc") answered "no memory ... among what gc removed" and
    memory_history showed no deletion. The pipeline's gc buries what it deletes; this does
    too."""
    ids = _seed(tmp_path)

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            done = payload(await client.call_tool("gc", {"dry_run": False}))
            history = payload(await client.call_tool("memory_history", {"memory_id": ids["weak"]}))
            args = {"action": "gc", "memory_id": ids["weak"]}
            restored = payload(await client.call_tool("undo_consolidation", args))
            return done, history, restored

    done, history, restored = anyio.run(go)
    assert ids["weak"] in done["memory_ids"] and done["removed_count"] >= 2
    assert history["events"][-1]["source"] == "gc", history["events"]
    assert restored["success"]
    store = open_store(tmp_path / "stm")
    assert store.get(ids["weak"]).content == "a forgotten detail about fax machines"
    assert store.find(ids["weak_too"]) is None  # only what was asked for came back
