"""The MCP server's memory through a day's use: RSS of `cortexgraph-mcp` after each phase.

A day, as an assistant drives the server over stdio at N seeded memories: start-up, the first
search (the store and the embedding model load), saves and searches, `analyze_message` on
every user message (the seed asks the assistant to call it each time), and a consolidation run
(`run_consolidation`, a dry run unless --live). RSS and its high-water mark (VmHWM) are read
from /proc for the server process after each phase. Issue 35's goal: under 300 MB throughout.

    python bench/mcp_rss_bench.py [--memories 10000] [--calls 300] [--analyze 100] [--live]

Which packages are installed matters (the light install has no torch; the `full` extra may load
it for spaCy/KeyBERT paths): the table names the embedding backend the server reported.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import anyio
import psutil
from mcp import Client, StdioServerParameters
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine_line
from mcp_bench import env_for, seed

MESSAGES = [
    "Remember that I prefer Postgres over MySQL for the billing ledger.",
    "What did we decide about the deploy freeze last week?",
    "Ana said the auth service should move to the new cluster by Friday.",
    "yes, do that",
    "Can you look up what Tom said about the quarterly review?",
]


def server_process() -> psutil.Process:
    """The `cortexgraph-mcp` child of this process (the stdio client started it)."""
    for child in psutil.Process().children(recursive=True):
        try:
            if any("cortexgraph-mcp" in part for part in child.cmdline()):
                return child
        except psutil.Error:
            continue
    raise RuntimeError("no cortexgraph-mcp child process")


def memory_mb(proc: psutil.Process) -> tuple[float, float]:
    """(RSS, high-water RSS) in MB, from /proc/PID/status."""
    fields = {}
    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


async def day(params: StdioServerParameters, calls: int, analyze: int, live: bool) -> list:
    rows: list[tuple[str, float, float, float]] = []
    async with Client(params) as client:
        t = time.perf_counter()
        await client.list_tools()
        proc = server_process()
        rows.append(("started (tools/list)", time.perf_counter() - t, *memory_mb(proc)))
        t = time.perf_counter()
        await client.call_tool("search_memory", {"query": "billing ledger postgres"})
        rows.append(
            ("first search (store and model load)", time.perf_counter() - t, *memory_mb(proc))
        )
        t = time.perf_counter()
        for i in range(calls):
            await client.call_tool(
                "save_memory",
                {"content": f"Ana: note {i}, we moved the billing ledger to Postgres"},
            )
            await client.call_tool("search_memory", {"query": f"billing ledger note {i % 50}"})
        rows.append(
            (f"{calls} saves + {calls} searches", time.perf_counter() - t, *memory_mb(proc))
        )
        t = time.perf_counter()
        for i in range(analyze):
            r = await client.call_tool(
                "analyze_message", {"message": MESSAGES[i % len(MESSAGES)], "session_id": "bench"}
            )
            assert not r.is_error, r.content
        rows.append((f"{analyze} analyze_message", time.perf_counter() - t, *memory_mb(proc)))
        t = time.perf_counter()
        r = await client.call_tool("run_consolidation", {"dry_run": not live})
        assert not r.is_error, r.content
        what = "run_consolidation (live)" if live else "run_consolidation (dry run)"
        rows.append((what, time.perf_counter() - t, *memory_mb(proc)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--calls", type=int, default=300, help="saves, each followed by a search")
    ap.add_argument("--analyze", type=int, default=100, help="analyze_message calls")
    ap.add_argument("--live", action="store_true", help="a live consolidation run, not a dry run")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cg-rss-bench-"))
    try:
        store = work / "stm"
        seed(store, args.memories)
        server = shutil.which("cortexgraph-mcp", path=str(Path(sys.executable).parent))
        params = StdioServerParameters(command=server or "cortexgraph-mcp", env=env_for(store))
        rows = anyio.run(day, params, args.calls, args.analyze, args.live)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = Table(title=f"cortexgraph-mcp through a day at {args.memories:,} memories")
    for col in ("phase", "seconds", "RSS MB", "peak RSS MB"):
        table.add_column(col, justify="left" if col == "phase" else "right")
    for phase, seconds, rss, peak in rows:
        table.add_row(phase, f"{seconds:.1f}", f"{rss:.0f}", f"{peak:.0f}")
    console = Console()
    console.print(table)
    torch = "installed" if _has("torch") else "not installed"
    console.print(f"torch {torch} in {sys.prefix}; {machine_line()}")


def _has(module: str) -> bool:
    from importlib.util import find_spec

    return find_spec(module) is not None


if __name__ == "__main__":
    main()
