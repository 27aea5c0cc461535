"""The monitor's ledger stays out of the user's memories, through a real MCP client.

Every user-facing read (search, unified search, retrieval, stats, graph, graph query, the
consolidation preview) gives the same answer before and after the monitor has recorded loops,
reminders and outcomes; a store written by the old layout (bm.* core memories) is moved out on
open with every user memory and relation kept and the monitor's history intact.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from child_env import child_env, hook_process
from mcp import Client
from monitor_sessions import ERR, error_loop

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_server"))
from mcp_helpers import make_settings, payload

from cortexgraph.activation.monitor import BehaviorLedger, load_pattern_set, open_ledger_store
from cortexgraph.hooks.quick_search import RawStoreRecords
from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_760_000_000
USER_FACTS = [
    ("We use PostgreSQL 16 for the billing database", ["decision", "database"], ["PostgreSQL"]),
    ("Alice prefers tabs over spaces in Go code", ["preference"], ["Alice"]),
    ("The deploy pipeline runs on GitHub Actions", ["ci"], ["GitHub Actions"]),
]
SECONDS = re.compile(r"\d+\.\d+ s\b")
VOLATILE = {
    "score",
    "avg_score",  # read_graph's stats: the mean of scores that decay while the test runs
    "decay_score",
    "age_days",
    "last_used_ago",
    "elapsed_ms",
    "took_ms",
    "generated_at",
    "now",
    "seconds",
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "CLAUDE.md").write_text(
        "- When the same error repeats, find the root cause.\n", encoding="utf-8"
    )
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(proj))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return proj


def _stable(value: Any) -> Any:
    """A read's answer without the fields that move with the clock."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    if isinstance(value, str):
        return SECONDS.sub("_ s", value)
    return value


async def user_reads(c: Client) -> dict[str, Any]:
    """Everything a user (or the model for them) can read from the store."""
    out: dict[str, Any] = {}
    for tool, args in (
        ("search_memory", {"query": "what database do we use?"}),
        ("search_memory", {"query": "behaviour pattern intervention context monitored"}),
        ("search_unified", {"query": "what database do we use?"}),
        ("memory_retrieve", {"query": "what database do we use?"}),
        ("memory_retrieve", {"query": "error repeated loop intervention"}),
        ("read_graph", {"status": "all"}),
        ("graph_query", {"entity": "PostgreSQL"}),
        ("run_consolidation", {"dry_run": True}),
    ):
        result = await c.call_tool(tool, args)
        text = result.content[0].text
        out[f"{tool} {json.dumps(args)}"] = _stable(json.loads(text)) if text[:1] in "{[" else text
    for uri in ("cortexgraph://stats", "cortexgraph://graph", "cortexgraph://core"):
        r = await c.read_resource(uri)
        out[uri] = _stable(json.loads(r.contents[0].text))
    return out


async def run_monitor(c: Client) -> dict[str, Any]:
    alerts = await error_loop(c)
    assert alerts[-1]["alert"] is not None
    payload(
        await c.call_tool(
            "report_outcome",
            {
                "pattern_id": "repeated-error",
                "intervention_id": "root-cause",
                "worked": True,
                "context": "project:proj",
            },
        )
    )
    payload(await c.call_tool("request_intervention", {"pattern_id": "repeated-error"}))
    return payload(await c.call_tool("query_pattern_history", {"signature": "repeated-error"}))


def test_monitor_leaves_every_user_read_unchanged(tmp_path, project):
    settings = make_settings(tmp_path)

    async def go():
        async with Client(build_server(settings)) as c:
            for content, tags, entities in USER_FACTS:
                payload(
                    await c.call_tool(
                        "save_memory", {"content": content, "tags": tags, "entities": entities}
                    )
                )
            before = await user_reads(c)
            history = await run_monitor(c)
            after = await user_reads(c)
            return before, history, after

    before, history, after = anyio.run(go)
    for key in before:
        assert after[key] == before[key], key
    [h] = history["patterns"]
    assert h["occurrences"][0]["count"] >= 1 and h["interventions"][0]["worked"] == 1
    stm = (tmp_path / "stm" / "memories.jsonl").read_text("utf-8")
    assert "bm." not in stm and "behavior-monitor" not in stm
    assert not (tmp_path / "stm" / "relations.jsonl").exists() or "bm." not in (
        tmp_path / "stm" / "relations.jsonl"
    ).read_text("utf-8")
    ledger = open_ledger_store(tmp_path / "stm")
    assert ledger.find("bm.pattern.repeated-error") is not None


def old_layout_store(tmp_path: Path) -> tuple[list[str], str]:
    """A store as the monitor used to leave it: bm.* core memories among the user's own."""
    store = open_store(tmp_path / "stm")
    ids = [store.save(c, tags=t, entities=e, now=NOW).id for c, t, e in USER_FACTS]
    rel = store.add_relation(ids[0], ids[2], "related", now=NOW).id
    ledger = BehaviorLedger(store)
    spec = load_pattern_set().get("repeated-error")
    ledger.record_occurrence(spec, "global", "err:abc", "loop", now=NOW, error=ERR)
    ledger.record_shown(spec, "root-cause", "global", now=NOW)
    ledger.record_outcome(spec, "root-cause", "global", True, now=NOW + 5)
    assert len(store.list(tags=["behavior-monitor"])) == 3
    return ids, rel


def test_old_store_is_migrated_on_open_and_nothing_of_the_user_is_lost(tmp_path, project):
    ids, rel = old_layout_store(tmp_path)
    hook_view = RawStoreRecords.read(tmp_path / "stm")  # a hook reading before any migration
    assert set(hook_view.records) == set(ids) and len(hook_view.monitor_ids) == 3

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as c:
            found = payload(
                await c.call_tool(
                    "search_memory", {"query": "context where assistant behaviour was monitored"}
                )
            )
            retrieved = await c.call_tool("memory_retrieve", {"query": "what database do we use?"})
            stats = json.loads((await c.read_resource("cortexgraph://stats")).contents[0].text)
            graph = payload(await c.call_tool("read_graph", {"status": "all"}))
            history = payload(
                await c.call_tool("query_pattern_history", {"signature": "repeated-error"})
            )
            return found, retrieved.content[0].text, stats, graph, history

    found, retrieved, stats, graph, history = anyio.run(go)
    assert all(not r["id"].startswith("bm.") for r in found["results"])
    assert "monitored" not in retrieved and "{error}" not in retrieved
    assert "PostgreSQL" in retrieved
    assert (stats["memories"], stats["relations"]) == (3, 1)
    assert {m["id"] for m in graph["memories"]} == set(ids)
    assert [r["id"] for r in graph["relations"]] == [rel]
    [h] = history["patterns"]
    assert h["occurrences"][0]["count"] == 1
    assert next((i["intervention_id"], i["worked"]) for i in h["interventions"]) == (
        "root-cause",
        1,
    )
    reopened = open_store(tmp_path / "stm")
    assert sorted(m.id for m in reopened.list()) == sorted(ids)
    assert [m.content for m in sorted(reopened.list(), key=lambda m: ids.index(m.id))] == [
        c for c, _, _ in USER_FACTS
    ]
    assert len(open_ledger_store(tmp_path / "stm").list()) == 3


def test_session_start_hook_process_moves_old_records_out(tmp_path):
    ids, _ = old_layout_store(tmp_path)
    env = child_env(
        CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "stm"),
        HOME=str(tmp_path / "home"),
        CORTEXGRAPH_HOOK_STATE_DIR=str(tmp_path / "state"),
        PYTHONPATH=str(ROOT),
    )
    body = {
        "session_id": "s1",
        "cwd": str(tmp_path),
        "source": "startup",
        "hook_event_name": "SessionStart",
    }
    proc = hook_process("session-start", body, env)
    assert proc.returncode == 0 and "skipped" not in proc.stderr, proc.stderr
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "PostgreSQL" in context and "monitored" not in context
    assert sorted(m.id for m in open_store(tmp_path / "stm").list()) == sorted(ids)
    assert RawStoreRecords.read(tmp_path / "stm").monitor_ids == []
    assert len(open_ledger_store(tmp_path / "stm").relations()) == 2


def test_every_cli_that_opens_the_store_moves_old_records_out(tmp_path):
    """The CLIs open the user's store through one helper (user_store.open_user_store)."""
    ids, _ = old_layout_store(tmp_path)
    env = child_env(CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "stm"), HOME=str(tmp_path / "home"))
    bin_dir = Path(sys.executable).parent
    proc = subprocess.run(
        [
            str(bin_dir / "cortexgraph-maintenance"),
            "--storage-path",
            str(tmp_path / "stm"),
            "stats",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    store = open_store(tmp_path / "stm")
    assert store.list(tags=["behavior-monitor"]) == []
    assert sorted(m.id for m in store.list()) == sorted(ids)
