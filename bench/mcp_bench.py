"""MCP server over stdio at N memories: start-up to tools/list, save and search round trips
(p50/p95), and the first search after a burst of 1,000 fresh saves.

The first row is the user's path: default settings (enrichment and embeddings on), saves with
their text alone, as an assistant sends them. The rows after it say in their name what they
switch off; cortexgraph 1.2.1 runs beside when its venv is present (with its defaults).

    python bench/mcp_bench.py [--memories 10000] [--calls 200] [--bursts 3]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
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
from cortexgraph.storage.recent_saves import NEIGHBOUR_CHARS, clip


def seed(path: Path, n: int, conversations: bool = False) -> None:
    """``n`` memories of Zipf-like words over 30 days. ``conversations``: saved as
    save_memory saves a conversation's turns, in sessions of 5-60 a minute or so apart, each
    turn after the first with the one before as its neighbour text (storage.recent_saves);
    the same contents either way."""
    rng = random.Random(7)
    sessions = random.Random(11)
    vocab = [f"w{i}" for i in range(5000)] + ["postgres", "ledger", "deploy", "billing", "auth"]
    weights = [1 / (i + 1) for i in range(len(vocab))]  # Zipf-like, as real text is
    now = int(time.time())
    store = open_store(path)
    batch: list[Memory] = []
    left = 0  # turns left in this session
    for _ in range(n):
        words = rng.choices(vocab, weights, k=rng.randint(12, 40))
        t = now - rng.randint(0, 30 * 86400)
        content = " ".join(words)
        neighbour = None
        if conversations:
            if left:
                t = min(now, batch[-1].created_at + sessions.randint(20, 120))
                neighbour = clip(batch[-1].content, NEIGHBOUR_CHARS)
                left -= 1
            else:
                left = sessions.randint(5, 60) - 1
        batch.append(
            Memory(
                id=new_id(),
                content=content,
                meta=MemoryMeta(tags=(rng.choice(vocab[:50]),)),
                created_at=t,
                last_used=t,
                neighbour_text=neighbour,
            )
        )
    store.put_many(batch)


SWITCHED_OFF = {
    "CORTEXGRAPH_ENABLE_EMBEDDINGS": "false",
    "CORTEXGRAPH_ENABLE_PREPROCESSING": "false",
}


def env_for(path: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORTEXGRAPH_")}
    (path.parent / "vault").mkdir(parents=True, exist_ok=True)  # a named vault must exist
    env.update(
        CORTEXGRAPH_STORAGE_PATH=str(path),
        CORTEXGRAPH_LOG_LEVEL="WARNING",
        LTM_VAULT_PATH=str(path.parent / "vault"),
    )
    env.update(extra or {})
    return env


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def measure(
    params: StdioServerParameters, calls: int, hand_fed: bool = False, bursts: int = 0
) -> dict[str, float]:
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
            args = {"content": f"Ana: bench memory {i}, we moved the billing ledger to Postgres"}
            if hand_fed:  # what no assistant sends: metadata filled in by hand
                args.update(tags=["bench"], entities=[], strength=1.0)
            t = time.perf_counter()
            r = await client.call_tool("save_memory", args)
            saves.append(time.perf_counter() - t)
            assert not r.is_error, r.content
            t = time.perf_counter()
            r = await client.call_tool(
                "search_memory", {"query": "billing ledger postgres", "top_k": 10}
            )
            searches.append(time.perf_counter() - t)
            assert not r.is_error, r.content
        after_burst = []
        for b in range(bursts):  # 1,000 fresh saves, then the search that follows them
            for i in range(1000):
                await client.call_tool(
                    "save_memory",
                    {"content": f"burst {b} note {i} on topic {i % 97} for the quarterly review"},
                )
            t = time.perf_counter()
            await client.call_tool("search_memory", {"query": "quarterly review topic 42"})
            after_burst.append(time.perf_counter() - t)
    return {
        "startup": startup,
        "first": first,
        "save": pct(saves, 0.5),
        "save95": pct(saves, 0.95),
        "search": pct(searches, 0.5),
        "search95": pct(searches, 0.95),
        "burst": max(after_burst) if after_burst else float("nan"),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--bursts", type=int, default=3, help="1,000-save bursts before a search")
    ap.add_argument("--v1-python", default="/tmp/cg1venv/bin/python")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cg-mcp-bench-"))
    base = work / "seed" / "stm"
    seed(base, args.memories)
    rows: dict[str, dict[str, float]] = {}
    configs = [
        ("cortexgraph 2, defaults (text-only saves)", {}, False, args.bursts),
        ("cortexgraph 2, enrichment and embeddings OFF, metadata hand-fed", SWITCHED_OFF, True, 0),
    ]
    for i, (name, extra, hand_fed, bursts) in enumerate(configs):
        ours = work / f"v2-{i}" / "stm"
        shutil.copytree(base, ours)
        rows[name] = anyio.run(
            measure,
            StdioServerParameters(
                command=sys.executable,
                args=["-m", "cortexgraph.mcp_server"],
                env=env_for(ours, extra),
                cwd=str(work),
            ),
            args.calls,
            hand_fed,
            bursts,
        )
    v1 = Path(args.v1_python)
    if v1.exists():
        theirs = work / "v1" / "stm"
        shutil.copytree(base, theirs)
        rows["cortexgraph 1.2.1 (mcp 1.23), its defaults"] = anyio.run(
            measure,
            StdioServerParameters(
                command=str(v1),
                args=["-m", "cortexgraph.server"],
                env=env_for(theirs),
                cwd=str(work),
            ),
            args.calls,
        )
    table = Table(title=f"MCP over stdio, {args.memories:,} memories, {args.calls} calls each")
    for col in (
        "server",
        "start-up to tools/list",
        "first call (store load)",
        "save p50 / p95",
        "search p50 / p95",
        "first search after 1,000 saves (max)",
    ):
        table.add_column(col, justify="right")
    ms = lambda x: f"{x * 1000:.1f} ms"  # noqa: E731
    for name, r in rows.items():
        table.add_row(
            name,
            ms(r["startup"]),
            ms(r["first"]),
            f"{ms(r['save'])} / {ms(r['save95'])}",
            f"{ms(r['search'])} / {ms(r['search95'])}",
            ms(r["burst"]),
        )
    if not v1.exists():
        table.caption = f"no cortexgraph 1.2.1 venv at {v1}: baseline skipped"
    Console(width=200).print(table)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
