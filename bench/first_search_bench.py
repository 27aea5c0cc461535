"""The first search in a fresh `cortexgraph` process: seconds to the first result line and to
the end, on a store such as the demo's (`cortexgraph demo` writes demo/store).

    python bench/first_search_bench.py demo/store [--runs 3] [--query "..."] [--fresh-copy]

Each run is a new process (imports, the store read, the meaning model loaded): what a person
waits for at the terminal. Rows: the default search (keyword results first when the model is not
ready within a second), --json (one answer, after the model: what the default did before) and
--no-embeddings (keywords only). --fresh-copy runs each on a copy of the store as it is now (its
vector cache included), so no run inherits the vectors an earlier run saved. The machine's load average is printed with the table: timings under load are not
idle-machine timings.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system, all threads) the process has used so far: on an idle
    machine its wall time to this point is about this (one busy thread), whatever the load."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(
    store: Path, query: str, extra: list[str], fresh: bool
) -> tuple[float, float, str, float]:
    """(seconds to the first result row, seconds to exit, the label line if any, CPU seconds
    used by the first row)."""
    if fresh:
        copy = Path(tempfile.mkdtemp(prefix="cg-first-search-")) / "store"
        shutil.copytree(store, copy, ignore=shutil.ignore_patterns(".git", ".beads"))
        try:
            return one_run(copy, query, extra, False)
        finally:
            shutil.rmtree(copy.parent, ignore_errors=True)
    env = {**os.environ, "COLUMNS": "120", "CORTEXGRAPH_STORAGE_PATH": str(store)}
    argv = [sys.executable, "-m", "cortexgraph.cli.main", "search", query, *extra]
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    assert proc.stdout is not None
    first, label, cpu = None, "", float("nan")
    for line in proc.stdout:
        if first is None and (line.startswith("│") or line.startswith("[")):  # a result row
            first = time.perf_counter() - start
            cpu = _cpu_seconds(proc.pid)
        if "keyword results" in line and not label:
            label = line.strip()
    proc.wait()
    total = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"search failed ({proc.returncode})")
    return (first if first is not None else total), total, label, cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("store", type=Path)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--query", default="why did we choose postgres for billing")
    p.add_argument("--fresh-copy", action="store_true")
    args = p.parse_args()
    print(machine_line())
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), cores: {os.cpu_count()}")
    print(
        f"{'search':<18} {'first row s':>12} {'CPU s by then':>14} {'exit s':>8}  "
        "runs (first row/exit s); medians"
    )
    runs = (("default", []), ("--json", ["--json"]), ("--no-embeddings", ["--no-embeddings"]))
    for name, extra in runs:
        rows = [one_run(args.store, args.query, extra, args.fresh_copy) for _ in range(args.runs)]
        firsts = [r[0] for r in rows]
        totals = [r[1] for r in rows]
        cpus = [r[3] for r in rows]
        print(
            f"{name:<18} {statistics.median(firsts):>12.2f} {statistics.median(cpus):>14.2f}"
            f" {statistics.median(totals):>8.2f}  "
            + ", ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(firsts, totals, strict=True))
        )
        label = next((r[2] for r in rows if r[2]), "")
        if label:
            print(f"{'':<18} label: {label}")
    print(f"load average after: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
