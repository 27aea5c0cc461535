"""The MCP server's memory through a day's use: RSS of `cortexgraph-mcp` after each phase.

A day, as an assistant drives the server over stdio at N seeded memories: start-up, the first
search (the store and the embedding model load), saves and searches, `analyze_message` on
every user message (the seed asks the assistant to call it each time), and a consolidation run
(`run_consolidation`, a dry run unless --live). RSS is read from /proc for the server process
after each phase, and its high-water mark (VmHWM) for the phase alone: the mark is reset
before each phase (/proc/PID/clear_refs), so the consolidation row's peak is the run's own.
Issue 35's goal: under 300 MB throughout. The run's line below the table says how many texts
it answered from the server's embedding cache and how many it embedded.

    python bench/mcp_rss_bench.py [--memories 10000] [--calls 300] [--analyze 100] [--live]
                                  [--as-installed] [--no-cache] [--plain-seed]

Which packages are installed matters: the `full` extra's spaCy pipeline imports torch through
thinc on the first `analyze_message` (+250 MB). By default the server runs as the default
install does, with torch, spaCy, sentence-transformers and KeyBERT blocked at import (a
sitecustomize on its PYTHONPATH); `--as-installed` measures whatever this environment holds.
The last line says whether torch or spaCy ended up mapped into the server.

The seeded memories are saved as save_memory saves a conversation: in sessions, each turn after
the first with the turn before as its neighbour text (`--plain-seed`: none, as this bench
seeded before), so each has a second vector in the cache, of its own words.

A day's store has its embedding cache: the seeded store gets one of random unit vectors of the
model's width, keyed as the server keys them (the same bytes resident as real vectors; embedding
10k texts for real takes minutes on 2 shared cores). Consolidation finds its candidate pairs
with MiniLM or the static model and embeds each pair's texts afresh, so the run's memory is
the real one. `--no-cache` leaves the store without it (the server then embeds every memory in
the background through the day).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import anyio
import numpy as np
import psutil
from mcp import Client, StdioServerParameters
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine_line
from mcp_bench import env_for, seed

from cortexgraph.storage import open_store
from cortexgraph.storage.embedding_cache import text_key
from cortexgraph.storage.embeddings import DEFAULT_MODEL, dense_text

# The packages only the `full` extra brings (the default install has none of them).
FULL_ONLY = ("torch", "spacy", "thinc", "sentence_transformers", "keybert", "transformers")
# A module set to None in sys.modules is "not installed" to `import` (ModuleNotFoundError)
# and to importlib.util.find_spec (None), as in an environment without it.
BLOCKER = f"import sys\nsys.modules.update(dict.fromkeys({FULL_ONLY!r}))\n"

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


def reset_peak(proc: psutil.Process) -> bool:
    """Start the process's high-water mark again from its RSS now; False where not allowed."""
    try:
        Path(f"/proc/{proc.pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def memory_mb(proc: psutil.Process) -> tuple[float, float]:
    """(RSS, high-water RSS) in MB, from /proc/PID/status."""
    fields = {}
    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


def seed_cache(store: Path) -> None:
    """An embedding cache for every seeded memory: random unit vectors, keyed as the server
    keys its own (see the module doc). A memory with neighbour text has two, as the server's
    background embedder leaves them: its row (content and neighbour) and its own words."""
    memories = list(open_store(store))
    texts = [dense_text(m) for m in memories]
    texts += [m.content for m in memories if m.ranking_context]
    keys = np.array([text_key(t) for t in dict.fromkeys(texts)])
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((len(keys), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    np.savez(store / f".embeddings-{DEFAULT_MODEL}.npz", keys=keys, vectors=vectors)


def mapped(proc: psutil.Process) -> str:
    """Which of the full extra's native libraries the server has mapped."""
    maps = Path(f"/proc/{proc.pid}/maps").read_text()
    found = [lib for lib in ("libtorch", "spacy", "thinc") if lib in maps]
    return ", ".join(found) if found else "no torch, spaCy or thinc"


async def day(params: StdioServerParameters, calls: int, analyze: int, live: bool) -> tuple:
    rows: list[tuple[str, float, float, float]] = []
    per_phase = True

    def row(phase: str, t: float) -> None:
        nonlocal per_phase
        rows.append((phase, time.perf_counter() - t, *memory_mb(proc)))
        per_phase = reset_peak(proc) and per_phase

    async with Client(params) as client:
        t = time.perf_counter()
        await client.list_tools()
        proc = server_process()
        row("start (tools/list)", t)
        t = time.perf_counter()
        r = await client.call_tool("search_memory", {"query": "billing ledger postgres"})
        assert not r.is_error, r.content
        row("first search (store and model load)", t)
        t = time.perf_counter()
        for i in range(calls):
            await client.call_tool(
                "save_memory",
                {"content": f"Ana: note {i}, we moved the billing ledger to Postgres"},
            )
        row(f"{calls} saves", t)
        t = time.perf_counter()
        for i in range(calls):
            r = await client.call_tool("search_memory", {"query": f"billing ledger note {i % 50}"})
            assert not r.is_error, r.content
        row(f"{calls} searches", t)
        t = time.perf_counter()
        for i in range(analyze):
            r = await client.call_tool(
                "analyze_message", {"message": MESSAGES[i % len(MESSAGES)], "session_id": "bench"}
            )
            assert not r.is_error, r.content
        row(f"{analyze} analyze_message", t)
        t = time.perf_counter()
        r = await client.call_tool("run_consolidation", {"dry_run": not live})
        assert not r.is_error, r.content
        row("run_consolidation (live)" if live else "run_consolidation (dry run)", t)
        vectors = json.loads(r.content[0].text).get("vectors", {})
        t = time.perf_counter()
        for i in range(10):
            await client.call_tool("search_memory", {"query": f"deploy freeze {i}"})
        row("after: 10 more searches", t)
        libs = mapped(proc)
    return rows, libs, vectors, per_phase


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--calls", type=int, default=100, help="saves, then as many searches")
    ap.add_argument("--analyze", type=int, default=50, help="analyze_message calls")
    ap.add_argument("--live", action="store_true", help="a live consolidation run, not a dry run")
    ap.add_argument(
        "--as-installed", action="store_true", help="do not block the full extra's packages"
    )
    ap.add_argument("--no-cache", action="store_true", help="seed no embedding cache")
    ap.add_argument(
        "--plain-seed",
        action="store_true",
        help="seed memories without neighbour text (the bench before conversations)",
    )
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cg-rss-bench-"))
    try:
        store = work / "stm"
        seed(store, args.memories, conversations=not args.plain_seed)
        if not args.no_cache:
            seed_cache(store)
        env = env_for(store)
        if not args.as_installed:
            (work / "site").mkdir()
            (work / "site" / "sitecustomize.py").write_text(BLOCKER)
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(work / "site"), env.get("PYTHONPATH")) if p
            )
        server = shutil.which("cortexgraph-mcp", path=str(Path(sys.executable).parent))
        params = StdioServerParameters(command=server or "cortexgraph-mcp", env=env)
        rows, libs, vectors, per_phase = anyio.run(day, params, args.calls, args.analyze, args.live)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    install = "as installed" if args.as_installed else "default install (full extra blocked)"
    seeded = "plain" if args.plain_seed else "conversations"
    table = Table(
        title=f"cortexgraph-mcp through a day at {args.memories:,} memories ({seeded}), {install}"
    )
    peak = "peak MB in phase" if per_phase else "peak MB since start"
    for col in ("phase", "seconds", "RSS MB after", peak):
        table.add_column(col, justify="left" if col == "phase" else "right")
    for phase, seconds, rss, peak in rows:
        table.add_row(phase, f"{seconds:.1f}", f"{rss:.0f}", f"{peak:.0f}")
    console = Console()
    console.print(table)
    torch = "installed" if _has("torch") else "not installed"
    console.print(f"server mapped: {libs}; torch {torch} in {sys.prefix}")
    if vectors:
        console.print(
            f"run_consolidation: {vectors['from_cache']:,} texts from the server's embedding "
            f"cache, {vectors['embedded']:,} embedded"
        )
    else:
        console.print("run_consolidation: no reuse figures (a server before they were reported)")
    console.print(f"{machine_line()}; load average {os.getloadavg()[0]:.1f}")


def _has(module: str) -> bool:
    from importlib.util import find_spec

    return find_spec(module) is not None


if __name__ == "__main__":
    main()
