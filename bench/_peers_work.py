"""The work bench/peers_bench.py gives every system, through its MCP server over stdio.

- start-up: spawn to the tools/list reply, on an existing empty store (one untimed start makes
  it first), median of fresh processes;
- writes: one server, one growing store; each save's round trip timed. At every size mark the
  column holds the writes so far (p50/p95) and then the searches at that size: each query names
  the person, technology and subject of one stored fact, and hit@10 says how often that fact
  came back in the first ten (a check that a fast search is also finding things);
- LoCoMo dev: the shared locomo_mcp.py method. A fresh server and store per conversation, every
  turn saved as its text alone, every question asked for 10 results, the returned items mapped
  back to turn ids and scored by the shared scorer (R@5, MRR).
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from _peers_systems import Peer, fresh_home, remove
from mcp import ClientSession
from mcp.client.stdio import stdio_client

Tick = Callable[[int], None]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return 1000 * xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


@asynccontextmanager
async def serve(peer: Peer, home: Path):
    """A session with ``peer``'s server on ``home``; its stderr goes to a file there."""
    with open(home / "server-stderr.log", "w", encoding="utf-8") as err:
        async with (
            stdio_client(peer.params(home), errlog=err) as (r, w),
            ClientSession(r, w) as s,
        ):
            await s.initialize()
            yield s


async def _start_once(peer: Peer, home: Path) -> float:
    t = time.perf_counter()
    async with serve(peer, home) as s:
        await s.list_tools()
        return time.perf_counter() - t


def startup(peer: Peer, root: Path, runs: int, tick: Tick) -> dict[str, Any]:
    home = fresh_home(root, "startup")
    try:
        asyncio.run(_start_once(peer, home))  # creates the store; not timed
        times = []
        for _ in range(runs):
            times.append(asyncio.run(_start_once(peer, home)))
            tick(1)
        return {"startup_ms": 1000 * statistics.median(times), "runs": runs}
    finally:
        remove(home)


def synthetic_work(n: int, queries: int, seed: int = 7) -> tuple[list[str], list[list[str]]]:
    """``n`` fact texts and, per text, its three entities (for queries)."""
    from _pipeline_data import synthetic

    memories, _ = synthetic(n, seed=seed)
    return [m.content for m in memories], [list(m.entities) for m in memories]


async def _writes(
    peer: Peer,
    home: Path,
    texts: list[str],
    entities: list[list[str]],
    sizes: list[int],
    queries: int,
    tick: Tick,
    out: dict[int, dict[str, Any]],
    mark: Callable[[], None],
) -> None:
    rng = random.Random(11)
    handles: list[str] = []
    lat: list[float] = []
    async with serve(peer, home) as s:
        t_all = time.perf_counter()
        for size in sorted(sizes):
            for i in range(len(handles), size):
                t = time.perf_counter()
                handles.append(await peer.save(s, f"m{i}", texts[i]))
                lat.append(time.perf_counter() - t)
                tick(1)
            wall = time.perf_counter() - t_all
            search_lat, hits = [], 0
            for j in rng.sample(range(size), min(queries, size)):
                t = time.perf_counter()
                got = await peer.search(s, " ".join(entities[j]), 10)
                search_lat.append(time.perf_counter() - t)
                hits += handles[j] in got
                tick(1)
            out[size] = {
                "write_p50_ms": pct(lat, 0.5),
                "write_p95_ms": pct(lat, 0.95),
                "write_wall_s": wall,
                "search_p50_ms": pct(search_lat, 0.5),
                "search_p95_ms": pct(search_lat, 0.95),
                "hit_at_10": hits / len(search_lat),
            }
            mark()


def writes(
    peer: Peer,
    root: Path,
    sizes: list[int],
    queries: int,
    tick: Tick,
    out: dict[int, dict[str, Any]],
    mark: Callable[[], None] = lambda: None,
) -> dict[int, dict[str, Any]]:
    """Fills ``out`` per size mark as it is reached (then calls ``mark``), so a run cut short
    keeps the marks it reached."""
    texts, entities = synthetic_work(max(sizes), queries)
    home = fresh_home(root, "writes")
    try:
        asyncio.run(_writes(peer, home, texts, entities, sizes, queries, tick, out, mark))
        return out
    finally:
        remove(home)


async def _conversation(
    peer: Peer, home: Path, conv: dict[str, Any], lat: dict[str, list[float]], tick: Tick
) -> list[tuple[dict[str, Any], list[str]]]:
    out = []
    async with serve(peer, home) as s:
        turn_of: dict[str, str] = {}
        for m in conv["memories"]:
            t = time.perf_counter()
            turn_of[await peer.save(s, m["id"], m["text"])] = m["id"]
            lat["save"].append(time.perf_counter() - t)
            tick(1)
        for q in conv["questions"]:
            t = time.perf_counter()
            got = await peer.search(s, q["question"], 10)
            lat["search"].append(time.perf_counter() - t)
            out.append((q, [turn_of[h] for h in got if h in turn_of]))
            tick(1)
    return out


def locomo(
    peer: Peer,
    root: Path,
    lr: ModuleType,
    convs: list[dict[str, Any]],
    tick: Tick,
    out: dict[str, Any],
    mark: Callable[[], None] = lambda: None,
) -> dict[str, Any]:
    """Fills ``out`` with the scores over the conversations done so far, after each one (then
    calls ``mark``), so a run cut short keeps a labelled partial figure."""
    lat: dict[str, list[float]] = {"save": [], "search": []}
    rows = []
    for done, conv in enumerate(convs, 1):
        home = fresh_home(root, f"locomo-{conv['id']}")
        try:
            for q, ranked in asyncio.run(_conversation(peer, home, conv, lat, tick)):
                rows.append({**q, "scores": lr.score_one(ranked, q["gold"], [5, 10])})
            out["notes"] = out.get("notes") or peer.notes(home)
        finally:
            remove(home)
        overall = lr.aggregate(rows, ["R@5", "R@10", "MRR"])["overall"]
        out.update(
            {
                "R@5": overall["R@5"],
                "R@10": overall["R@10"],
                "MRR": overall["MRR"],
                "questions": len(rows),
                "conversations": done,
                "of_conversations": len(convs),
                "save_p50_ms": pct(lat["save"], 0.5),
                "search_p50_ms": pct(lat["search"], 0.5),
            }
        )
        mark()
    return out


def load_average() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"
