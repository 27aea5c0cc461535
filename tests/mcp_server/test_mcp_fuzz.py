"""Per-tool argument fuzzing through a real MCP client: a rejected call changes no byte on disk.

Issue 15 (High 2): 13 of 850 rejected calls had already written. Every tool the server lists is
called with a valid base argument set in which one to three arguments are replaced by hostile
values (wrong types, huge or empty strings, malformed, unknown or path-like ids, booleans for
numbers, deep nesting, lone surrogates). After every call that returns an error, every file
under the store, vault and beads folders must be byte for byte what it was before the call,
the error must be a typed refusal (not a crash) and short.

Seeded and bounded in count only, so every run makes the same calls whatever the load:
CORTEXGRAPH_FUZZ_CALLS rounds over the tools (default 18: 864 calls, the scale at
which issue 15 found its 13 writes; it was 40 rounds cut off after a minute of wall clock, so
the count moved with the load); CORTEXGRAPH_FUZZ_SEED picks another seed.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_helpers import folder_bytes, make_settings

from cortexgraph.mcp_server.app import build_server
from cortexgraph.mcp_server.errors import MAX_ERROR_CHARS
from cortexgraph.storage import open_store

SEED = int(os.environ.get("CORTEXGRAPH_FUZZ_SEED", "15"))
CALLS_PER_TOOL = int(os.environ.get("CORTEXGRAPH_FUZZ_CALLS", "18"))
KNOWN_ERRORS = ("Invalid input", "Not found", "validation error", "Unknown tool", "Unavailable")
UNKNOWN = "3f2b8c1e-9d4a-4e7b-8f1a-2c3d4e5f6a7b"

# A call that would succeed, per tool; A, B, C stand for stored memory ids.
VALID: dict[str, dict[str, Any]] = {
    "save_memory": {
        "content": "fuzz memory about billing",
        "entities": ["billing"],
        "strength": 1.0,
    },
    "search_memory": {"query": "billing", "use_embeddings": False},
    "search_unified": {"query": "billing"},
    "touch_memory": {"memory_id": "A"},
    "observe_memory_usage": {"memory_ids": ["A"], "context_tags": ["x"]},
    "analyze_message": {"message": "I prefer tea in the morning"},
    "analyze_for_recall": {"message": "what did we decide about billing?"},
    "gc": {},
    "promote_memory": {"memory_id": "A", "dry_run": True},
    "cluster_memories": {},
    "consolidate_memories": {"mode": "preview", "auto_detect": True},
    "read_graph": {"page_size": 5},
    "open_memories": {"memory_ids": ["A"]},
    "create_relation": {"from_memory_id": "A", "to_memory_id": "B", "relation_type": "related"},
    "run_consolidation": {"dry_run": True},
    "list_consolidation_issues": {},
    "memory_retrieve": {"query": "billing", "token_budget": 200},
    "graph_query": {"entity": "billing"},
    "set_core_memory": {"memory_id": "A"},
    "memory_forget": {"memory_id": "C", "action": "deprecate"},
    "record_memory_update": {"memory_id": "B", "supersedes": ["C"]},
    "record_tool_call": {"session_id": "s1", "tool_name": "Bash", "tool_input": {"command": "ls"}},
    "report_outcome": {
        "pattern_id": "repeated-error",
        "intervention_id": "root-cause",
        "worked": True,
    },
    "query_pattern_history": {"signature": "repeated-error"},
    "request_intervention": {"pattern_id": "repeated-error"},
}


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


def hostile_pools(ids: dict[str, str]) -> dict[str, list[Any]]:
    a = ids["A"]
    return {
        "string": [
            "",
            " ",
            "\n",
            "not an id!",
            "../../etc/passwd",
            "x\n",
            UNKNOWN,
            a + "\n",
            a[:8],
            a[:7],
            "m:" + a,
            "a\u2028b",
            "nul\x00byte",
            "\ud800",
            "x" * 129,
            "x" * 201,
            "x" * 10_001,
            "é" * 60_000,
            "w " * 60_000,
            "true",
            "1",
            "null",
            '["a", "b"]',
            '{"a": 1}',
            "[" * 300,
        ],
        "integer": [True, False, 0, -1, 1, 3, 10**30, -(10**30), 2**63, 1.5, "10", None],
        "number": [True, False, -1, 0, 2.0000001, 1e308, -1e308, 10**30, "0.5", "nan", None],
        "boolean": ["yes", "false", 2, None, [], {}],
        "array": [
            [],
            [""],
            [None],
            [1],
            [[]],
            ["x"] * 101,
            [a, a, a],
            [a, UNKNOWN],
            ["not an id!"],
            ["x" * 300],
            [a, a + "\n"],
            [{"a": 1}],
            "not-a-list",
            [UNKNOWN],
            [a[:8] + "zz"],
            [a, "../etc"],
            ["x" * 201],
        ],
        "object": [
            {},
            {"a": "x" * 200_000},
            nested(40),
            {"": None},
            {"a": [1] * 30_000},
            [],
            "{}",
            7,
        ],
    }


def kinds(schema: dict[str, Any]) -> list[str]:
    options = schema.get("anyOf", [schema])
    known = ("string", "integer", "number", "boolean", "array", "object")
    return [o["type"] for o in options if o.get("type") in known] or ["string"]


def fuzzed(
    rng: random.Random, tool: Any, ids: dict[str, str], pools: dict[str, list[Any]]
) -> dict[str, Any]:
    base = json.loads(json.dumps(VALID.get(tool.name, {})))
    base = {
        k: ids.get(v, v)
        if isinstance(v, str)
        else [ids.get(x, x) for x in v]
        if isinstance(v, list)
        else v
        for k, v in base.items()
    }
    props = tool.input_schema.get("properties", {})
    names = sorted(props)
    if not names:
        return base
    # Mostly one bad argument beside valid ones: the case where a tool may get far enough to
    # write before it notices.
    for name in rng.sample(names, k=min(len(names), rng.choice((1, 1, 1, 1, 2, 3)))):
        own = rng.choice(kinds(props[name]))
        pool = pools[own] if rng.random() < 0.7 else pools[rng.choice(sorted(pools))]
        base[name] = rng.choice(pool)
    if rng.random() < 0.1:
        required = tool.input_schema.get("required", [])
        if required:
            base.pop(rng.choice(required), None)
    return base


def read_only(tool: Any) -> bool:
    return bool(tool.annotations and tool.annotations.read_only_hint)


def stub_analysers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The conversational analysers only read; stubbed so the fuzz loads no language model."""
    from cortexgraph import activation

    def analyze(message: str, **_: Any) -> dict[str, Any]:
        return {"should_save": False, "should_search": False, "chars": len(message)}

    monkeypatch.setattr(activation, "analyze_message", analyze)
    monkeypatch.setattr(activation, "analyze_for_recall", analyze)


def seed_store(tmp_path: Path) -> dict[str, str]:
    store = open_store(tmp_path / "stm")
    texts = ("billing runs on MySQL", "billing runs on Postgres", "billing is reconciled nightly")
    made = [store.save(text, tags=["billing"], entities=["billing"]) for text in texts]
    return dict(zip("ABC", (m.id for m in made), strict=True))


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_no_rejected_call_changes_the_store(tmp_path, monkeypatch):
    stub_analysers(monkeypatch)
    ids = seed_store(tmp_path)
    pools = hostile_pools(ids)
    rng = random.Random(SEED)
    changed: list[str] = []
    rejected: dict[str, int] = {}
    oversized: list[str] = []
    untyped: list[str] = []

    async def go() -> int:
        calls = 0
        settings = make_settings(tmp_path, beads_repo=tmp_path / "beads")
        async with Client(build_server(settings)) as client:
            tools = (await client.list_tools()).tools
            await client.call_tool("read_graph", {})  # the store is open: files exist
            # Tools that may write are called twice as often: they are the ones that can fail
            # after a write.
            rounds = [t for t in tools for _ in range(1 if read_only(t) else 2)]
            for _ in range(CALLS_PER_TOOL):
                for tool in rounds:
                    args = fuzzed(rng, tool, ids, pools)
                    before = folder_bytes(tmp_path)
                    try:
                        result = await client.call_tool(tool.name, args)
                        failed, text = result.is_error, result.content[0].text
                    except Exception as exc:  # refused by the client or transport
                        failed, text = True, repr(exc)[:300]
                    calls += 1
                    if not failed:
                        continue
                    rejected[tool.name] = rejected.get(tool.name, 0) + 1
                    if len(text) > MAX_ERROR_CHARS + 40:
                        oversized.append(f"{tool.name}: {len(text)} chars")
                    if not any(k in text for k in KNOWN_ERRORS):  # a crash, not a refusal
                        untyped.append(f"{tool.name} {json.dumps(args)[:200]} -> {text[:300]}")
                    if folder_bytes(tmp_path) != before:
                        changed.append(f"{tool.name} {json.dumps(args)[:300]} -> {text[:200]}")
        return calls

    calls = anyio.run(go)
    assert changed == []
    assert oversized == []
    assert untyped == []
    assert calls >= CALLS_PER_TOOL * len(VALID)  # every tool, every round
    assert len(rejected) >= 20  # nearly every tool saw rejected calls
