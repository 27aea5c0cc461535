"""MCP server over stdio: start-up to first tools/list, and save/search round-trip p50 at N
memories, side by side with cortexgraph 1.2.1's server when its venv is present.

    python bench/mcp_bench.py [--memories 10000] [--calls 200] [--v1-python /tmp/cg1venv/bin/python]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from rich.console import Console
from rich.table import Table

from cortexgraph.storage import Memory, MemoryMeta, open_store
from cortexgraph.storage.models import new_id


def seed(path: Path, n: int) -> None:
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(5000)] + ["postgres", "ledger", "deploy", "billing", "auth"]
    weights = [1 / (i + 1) for i in range(len(vocab))]  # Zipf-like, as real text is
    now = int(time.time())
    store = open_store(path)
    batch = []
    for _ in range(n):
        words = rng.choices(vocab, weights, k=rng.randint(12, 40))
        t = now - rng.randint(0, 30 * 86400)
        batch.append(Memory(id=new_id(), content=" ".join(words),
                            meta=MemoryMeta(tags=(rng.choice(vocab[:50]),)),
                            created_at=t, last_used=t))  # fmt: skip
    store.put_many(batch)


def env_for(path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORTEXGRAPH_")}
    env.update(CORTEXGRAPH_STORAGE_PATH=str(path), CORTEXGRAPH_ENABLE_EMBEDDINGS="false",
               CORTEXGRAPH_ENABLE_PREPROCESSING="false", CORTEXGRAPH_LOG_LEVEL="WARNING",
               LTM_VAULT_PATH=str(path.parent / "vault"), OMP_NUM_THREADS="1")  # fmt: skip
    return env


async def measure(params: StdioServerParameters, calls: int) -> dict[str, float]:
    t0 = time.perf_counter()
    async with Client(params) as client:
        await client.list_tools()
        startup = time.perf_counter() - t0
        # The first call waits for the store to finish loading; time it separately.
        t1 = time.perf_counter()
        await client.call_tool("search_memory", {"query": "warm up"})
        first = time.perf_counter() - t1
        saves, searches = [], []
        for i in range(calls):
            t = time.perf_counter()
            r = await client.call_tool(
                "save_memory",
                {
                    "content": f"bench memory {i} about the billing ledger",
                    "tags": ["bench"],
                    "entities": [],
                    "strength": 1.0,
                },
            )
            saves.append(time.perf_counter() - t)
            assert not r.is_error, r.content
            t = time.perf_counter()
            r = await client.call_tool(
                "search_memory", {"query": "billing ledger postgres", "top_k": 10}
            )
            searches.append(time.perf_counter() - t)
            assert not r.is_error, r.content
    return {"startup": startup, "first": first, "save": statistics.median(saves),
            "search": statistics.median(searches)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--v1-python", default="/tmp/cg1venv/bin/python")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cg-mcp-bench-"))
    base = work / "seed" / "stm"
    seed(base, args.memories)
    rows: dict[str, dict[str, float]] = {}
    ours = work / "v2" / "stm"
    shutil.copytree(base, ours)
    rows["cortexgraph 2 (mcp 2.x)"] = anyio.run(measure, StdioServerParameters(
        command=sys.executable, args=["-m", "cortexgraph.mcp_server"], env=env_for(ours), cwd=str(work)),
        args.calls)  # fmt: skip
    v1 = Path(args.v1_python)
    if v1.exists():
        theirs = work / "v1" / "stm"
        shutil.copytree(base, theirs)
        rows["cortexgraph 1.2.1 (mcp 1.23)"] = anyio.run(measure, StdioServerParameters(
            command=str(v1), args=["-m", "cortexgraph.server"], env=env_for(theirs),
            cwd=str(work)), args.calls)  # fmt: skip
    table = Table(title=f"MCP over stdio, {args.memories:,} memories, {args.calls} calls each")
    for col in (
        "server",
        "start-up to tools/list",
        "first call (store load)",
        "save p50",
        "search p50",
    ):
        table.add_column(col, justify="right")
    ref = rows["cortexgraph 2 (mcp 2.x)"]
    for name, r in rows.items():
        table.add_row(name, f"{r['startup'] * 1000:.0f} ms", f"{r['first'] * 1000:.0f} ms",
                      f"{r['save'] * 1000:.2f} ms", f"{r['search'] * 1000:.2f} ms")  # fmt: skip
    if len(rows) == 2:
        old = rows["cortexgraph 1.2.1 (mcp 1.23)"]
        table.add_row("ratio 2 / 1.2.1", *(f"{ref[k] / old[k]:.2f}x" for k in
                                           ("startup", "first", "save", "search")))  # fmt: skip
    else:
        table.caption = f"no cortexgraph 1.2.1 venv at {v1}: baseline skipped"
    Console().print(table)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
