"""LoCoMo through the MCP server over stdio, exactly as an assistant uses it.

Each conversation gets a fresh store and a fresh ``cortexgraph-mcp`` process; every turn is
saved with ``save_memory({"content": text})`` alone (no entity, time or context handed in)
and every question asked with ``search_memory({"query": q, "top_k": 10})``. Environment
overrides are the ablations; the defaults row has none. Same method as
../shared/bench/locomo_mcp.py, scored with the shared scorer in process.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

# Ablations through the real server: (row label, environment). Each switches one default.
MCP_ABLATIONS: list[tuple[str, dict[str, str]]] = [
    (
        "no subject entity (CORTEXGRAPH_SAVE_SUBJECT_ENTITY=false)",
        {"CORTEXGRAPH_SAVE_SUBJECT_ENTITY": "false"},
    ),
    (
        "+ a transcript line's mentions as entities (CORTEXGRAPH_SAVE_TRANSCRIPT_MENTIONS=true)",
        {"CORTEXGRAPH_SAVE_TRANSCRIPT_MENTIONS": "true"},
    ),
    (
        "no neighbour context (CORTEXGRAPH_SAVE_NEIGHBOUR_CONTEXT=false)",
        {"CORTEXGRAPH_SAVE_NEIGHBOUR_CONTEXT": "false"},
    ),
    (
        "no automatic supersession (CORTEXGRAPH_AUTO_SUPERSEDE=false)",
        {"CORTEXGRAPH_AUTO_SUPERSEDE": "false"},
    ),
    (
        "no strength estimate (CORTEXGRAPH_SAVE_ESTIMATE_STRENGTH=false)",
        {"CORTEXGRAPH_SAVE_ESTIMATE_STRENGTH": "false"},
    ),
    (
        "no entity tags (CORTEXGRAPH_ENABLE_TAG_SUGGESTION=false)",
        {"CORTEXGRAPH_ENABLE_TAG_SUGGESTION": "false"},
    ),
    (
        "+ spaCy entities at save (CORTEXGRAPH_SAVE_SPACY_ENTITIES=true)",
        {"CORTEXGRAPH_SAVE_SPACY_ENTITIES": "true"},
    ),
    (
        "+ KeyBERT tags at save (CORTEXGRAPH_SAVE_KEYPHRASE_TAGS=true)",
        {"CORTEXGRAPH_SAVE_KEYPHRASE_TAGS": "true"},
    ),
    ("fusion weight 0.5 (CORTEXGRAPH_SEMANTIC_WEIGHT=0.5)", {"CORTEXGRAPH_SEMANTIC_WEIGHT": "0.5"}),
    (
        "enrichment off (CORTEXGRAPH_ENABLE_PREPROCESSING=false)",
        {"CORTEXGRAPH_ENABLE_PREPROCESSING": "false"},
    ),
    (
        "embeddings off (CORTEXGRAPH_ENABLE_EMBEDDINGS=false)",
        {"CORTEXGRAPH_ENABLE_EMBEDDINGS": "false"},
    ),
]


def server_command() -> str:
    return shutil.which("cortexgraph-mcp") or str(Path(sys.executable).parent / "cortexgraph-mcp")


def _ids(payload: Any) -> list[str]:
    return [r["id"] for r in payload.get("results", []) if isinstance(r, dict) and "id" in r]


async def _conversation(
    conv: dict[str, Any], env: dict[str, str], lat: dict[str, list[float]]
) -> list[tuple[dict[str, Any], list[str]]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=server_command(), args=[], env=env)
    out: list[tuple[dict[str, Any], list[str]]] = []
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        dia: dict[str, str] = {}
        for m in conv["memories"]:
            t = time.perf_counter()
            res = await s.call_tool("save_memory", {"content": m["text"]})
            lat["save"].append(time.perf_counter() - t)
            if res.is_error:
                raise SystemExit(f"save_memory failed: {res.content[0].text[:300]}")
            dia[json.loads(res.content[0].text)["memory_id"]] = m["id"]
        for i, q in enumerate(conv["questions"]):
            t = time.perf_counter()
            res = await s.call_tool("search_memory", {"query": q["question"], "top_k": 10})
            (lat["first_search"] if i == 0 else lat["search"]).append(time.perf_counter() - t)
            ranked = [dia[x] for x in _ids(json.loads(res.content[0].text)) if x in dia]
            out.append((q, ranked))
    return out


def run_mcp(
    lr: ModuleType, convs: list[dict[str, Any]], overrides: dict[str, str]
) -> dict[str, Any]:
    """R@k/MRR and latencies through the stdio server, with ``overrides`` in its environment."""
    lat: dict[str, list[float]] = {"save": [], "search": [], "first_search": []}
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for conv in convs:
            home = Path(d) / conv["id"]
            home.mkdir()
            (home / "vault").mkdir()  # a named vault must exist
            env = {
                k: v for k, v in os.environ.items() if not k.startswith(("CORTEXGRAPH_", "LTM_"))
            }
            env.update(
                HOME=str(home),
                CORTEXGRAPH_STORAGE_PATH=str(home / "store"),
                LTM_VAULT_PATH=str(home / "vault"),
                CORTEXGRAPH_LOG_LEVEL="WARNING",
            )
            env.update(overrides)
            for q, ranked in asyncio.run(_conversation(conv, env, lat)):
                rows.append({**q, "scores": lr.score_one(ranked, q["gold"], [5, 10])})
    table = lr.aggregate(rows, ["R@5", "R@10", "Any@5", "Any@10", "MRR"])

    def pct(xs: list[float], q: float) -> float:
        xs = sorted(xs)
        return 1000 * xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")

    return {
        "table": table,
        "p50_ms": pct(lat["search"], 0.5),
        "p95_ms": pct(lat["search"], 0.95),
        "save_p50_ms": pct(lat["save"], 0.5),
        "save_p95_ms": pct(lat["save"], 0.95),
        "first_search_ms": 1000 * statistics.median(lat["first_search"]),
    }


def print_mcp_table(rows: list[tuple[str, dict[str, Any]]], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for col in [
        "configuration",
        "R@5",
        "R@10",
        "MRR",
        "multi-hop",
        "temporal",
        "open-dom",
        "single-hop",
        "save p50/p95 ms",
        "search p50/p95 ms",
        "first search ms",
    ]:
        table.add_column(col, justify="left" if col == "configuration" else "right")
    for name, res in rows:
        t = res["table"]
        o = t["overall"]
        cats = [
            t.get(k, {}).get("R@5", float("nan"))
            for k in ("1 multi-hop", "2 temporal", "3 open-domain", "4 single-hop")
        ]
        table.add_row(
            name,
            f"{o['R@5']:.3f}",
            f"{o['R@10']:.3f}",
            f"{o['MRR']:.3f}",
            *(f"{c:.3f}" for c in cats),
            f"{res['save_p50_ms']:.1f} / {res['save_p95_ms']:.1f}",
            f"{res['p50_ms']:.1f} / {res['p95_ms']:.1f}",
            f"{res['first_search_ms']:.0f}",
        )
    Console(width=220).print(table)


__all__ = ["MCP_ABLATIONS", "print_mcp_table", "run_mcp", "server_command"]
