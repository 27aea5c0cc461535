"""What a ``cortexgraph-consolidate --json`` process costs around the agents (issue 32).

``total_seconds`` counts the agents; a run's wall time also holds the interpreter's start, the
imports (typer, pydantic settings, Prefect, the flow's modules), Prefect's flow and task
machinery (the run's records, its logs and events, the heartbeat thread) and the exit. This
runs the CLI ``--repeat`` times in a row on one store, each a new process, as the console
script does (``cortexgraph.cli.consolidate.main``), and prints per phase the median wall
seconds and the process's CPU seconds (user + sys):

    imports       the process's start to the CLI's module loaded and the flow's modules
    flow call     run_pipeline: Prefect's flow run around the agents (``total_seconds``)
    exit          run_pipeline's return to the process's end (output, exit handlers)

Run it on a store the last run left unchanged to see the process alone (the run after no
change opens nothing), with a Prefect server already running, as a deployment has it:

    export PREFECT_API_URL=http://127.0.0.1:4200/api
    .venv/bin/python bench/cli_process_bench.py --store DIR/store --vault DIR/vault --repeat 5

The first run absorbs what changed since the store's last run, and is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

# Runs in the child: the CLI's main with marks at the phases' edges (perf_counter since the
# interpreter started is not available, so the child's start is measured by the parent).
_CHILD = """
import sys, time, json, atexit
marks = {"start": time.time()}
atexit.register(lambda: sys.stderr.write("MARKS " + json.dumps(marks) + "\\n"))
import cortexgraph.flows.consolidation as flow
from cortexgraph.cli import consolidate as cli
run_pipeline = flow.run_pipeline
def timed(*a, **k):
    marks["flow_call"] = time.time()
    try:
        return run_pipeline(*a, **k)
    finally:
        marks["flow_returned"] = time.time()
flow.run_pipeline = timed
sys.argv = ["cortexgraph-consolidate", *sys.argv[1:]]
cli.main()
"""


def run_once(args: list[str]) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, check=False
    )
    ended = time.time()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    marks = json.loads(
        next(line for line in out.stderr.splitlines() if line.startswith("MARKS "))[6:]
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        "wall": ended - started,
        "cpu": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
        "imports": marks["flow_call"] - started,
        "flow call": marks["flow_returned"] - marks["flow_call"],
        "total_seconds": report["total_seconds"],
        "exit": ended - marks["flow_returned"],
        "nothing_changed": bool((report.get("incremental") or {}).get("nothing_changed")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    opts = parser.parse_args()
    if not os.environ.get("PREFECT_API_URL"):
        print("note: no PREFECT_API_URL: each run starts its own Prefect server", file=sys.stderr)
    args = ["--storage-path", str(opts.store), "--vault", str(opts.vault), "--json"]
    run_once(args)  # absorbs what changed since the store's last run
    runs = [run_once(args) for _ in range(opts.repeat)]
    # A large store has memories crossing a decay bar by time alone every few seconds: a run
    # that found one opened the store. The table is of the runs that found nothing changed.
    rows = [r for r in runs if r["nothing_changed"]] or runs
    print(f"{opts.repeat} runs of cortexgraph-consolidate --json on {opts.store}")
    print(
        f"load average {os.getloadavg()[0]:.2f}; nothing changed in {len(rows)} of them"
        if rows is not runs
        else f"load average {os.getloadavg()[0]:.2f}; every run found something changed"
    )
    print(f"{'phase':<16}{'median s':>10}{'min s':>8}{'max s':>8}")
    for key in ("imports", "flow call", "total_seconds", "exit", "wall", "cpu"):
        values = [r[key] for r in rows]
        name = {"total_seconds": "  of it agents", "cpu": "CPU (user+sys)"}.get(key, key)
        print(f"{name:<16}{statistics.median(values):>10.2f}{min(values):>8.2f}{max(values):>8.2f}")


if __name__ == "__main__":
    main()
