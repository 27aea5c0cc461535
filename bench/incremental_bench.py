"""Incremental consolidation (issue 32): what a run costs after N new saves, through the real CLI.

For each store size: a synthetic store (bench/_pipeline_data.synthetic: near-duplicate groups
among unrelated facts, ages spread over 30 days up to now, old memories' entities already read
as earlier runs would have), then ``cortexgraph-consolidate --json`` runs in a row, each a new
process, defaults otherwise (embeddings, the real vault and beads):

    full (cold)         --full, embeds the whole store
    full                --full again (embeddings cached): the baseline
    +100 saves          incremental, after 100 new memories
    +1000 saves         incremental, after 1,000 new memories
    no change           incremental, nothing saved since

The table prints the agents' time (``total_seconds`` in --json), the wall time of the process,
and the incremental run's scope. One Prefect server serves every run (PREFECT_API_URL), as a
deployment has it.

    .venv/bin/python bench/incremental_bench.py --sizes 10000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine_line
from _pipeline_data import NOW, synthetic

from cortexgraph.storage import open_store
from cortexgraph.storage.models import MemoryMeta

CLI = str(Path(sys.executable).with_name("cortexgraph-consolidate"))
READ = {"entities_found": "spacy+rules"}  # what the earlier runs' entity step left


def build(store_dir: Path, n: int, extra: int) -> list:
    """The store of ``n`` memories aged 0-30 days from now; returns ``extra`` more to save."""
    memories, _ = synthetic(n + extra)
    shift = int(time.time()) - NOW - 3600  # the generator's clock -> an hour ago
    aged = [
        replace(
            m,
            created_at=m.created_at + shift,
            last_used=m.last_used + shift,
            meta=MemoryMeta(tags=m.meta.tags, extra=READ),
        )
        for m in memories[:n]
    ]
    store = open_store(store_dir)
    store.put_many(aged)
    return memories[n:]


def save_new(store_dir: Path, memories: list) -> None:
    store = open_store(store_dir)
    for m in memories:
        store.save(m.content, tags=m.meta.tags, entities=m.entities)


def consolidate(store_dir: Path, vault: Path, env: dict, *flags: str) -> tuple[dict, float]:
    args = [CLI, "--storage-path", str(store_dir), "--vault", str(vault), "--json", *flags]
    t0 = time.perf_counter()
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1]), wall


def scope_of(data: dict) -> str:
    inc = data.get("incremental")
    if inc is None:
        return "full"
    return f"{inc['changed']} changed, {inc['crossing']} crossing"


def bench(n: int, env: dict, rows: list[tuple]) -> None:
    with tempfile.TemporaryDirectory(prefix="cg-incr-") as tmp:
        store_dir, vault = Path(tmp) / "store", Path(tmp) / "vault"
        vault.mkdir()
        new = build(store_dir, n, 1100)
        steps = [
            ("full (cold)", (), ["--full"]),
            ("full", (), ["--full"]),
            ("+100 saves", new[:100], []),
            ("+1000 saves", new[100:1100], []),
            ("no change", (), []),
        ]
        base = cold = None
        for name, saves, flags in steps:
            if saves:
                save_new(store_dir, list(saves))
            data, wall = consolidate(store_dir, vault, env, *flags)
            agents = data["total_seconds"]
            own = sum(data["seconds"].values())  # the five agents alone, no setup
            if name == "full (cold)":
                cold = agents
            if name == "full":
                base = agents
            ratio = f"{agents / base:.3f}" if base and name != "full" else ""
            to_cold = f"{agents / cold:.3f}" if cold and name != "full (cold)" else ""
            row = (
                n,
                name,
                f"{agents:.2f}",
                f"{own:.2f}",
                f"{wall:.1f}",
                ratio,
                to_cold,
                scope_of(data),
            )
            rows.append(row)
            print(" | ".join(str(c) for c in row), flush=True)
            if os.environ.get("BENCH_VERBOSE"):
                print("   ", {k: round(v, 2) for k, v in data["seconds"].items()}, data["notes"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000])
    args = ap.parse_args()
    from cortexgraph.flows.local_server import PrefectServerProcess

    server = PrefectServerProcess()
    if not server.wait_ready(120):
        raise SystemExit(f"prefect server did not come up: {server.output_tail()}")
    env = {**os.environ, "PREFECT_API_URL": server.api_url, "OMP_NUM_THREADS": "1"}
    rows: list[tuple] = []
    try:
        for n in args.sizes:
            bench(n, env, rows)
    finally:
        server.stop()
    print(f"\nmachine: {machine_line()}")
    print(
        "| store | run | total_seconds | five agents s | wall s | / full | / full (cold) | scope |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print("| " + " | ".join(f"{c:,}" if isinstance(c, int) else str(c) for c in r) + " |")


if __name__ == "__main__":
    main()
