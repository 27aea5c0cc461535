"""The 10k warm pipeline run, today's code against a git revision's, in turn in fresh processes.

    OMP_NUM_THREADS=1 python bench/pipeline_ab.py --baseline REV [--n 10000] [--rounds 5]

Each round runs ``pipeline_bench.run_once`` once per code, each in a fresh process, the first
code alternating: a fresh store of ``synthetic(n)``, the warm embedding cache in ``--cache-dir``
(built first if it lacks any text), the real vault and the beads tracker, as the flow runs it.
The revision's code is laid out from ``git archive`` as ``open_bench.py --baseline`` does; the
driving bench code is today's for both. Prints min / median seconds per step and the ratio of
the medians, baseline / now.

Why a bench of its own: on the project's shared 2-core VM the same code's 10k warm run moved
from 7 s to 11 s within half an hour (docs/pipeline.md, "Sixth round"), more than any change
to the code moves it. Only the two codes measured in the same minutes say what the code did.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line
from open_bench import runs_in_turn

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("wall", "cpu", "decay", "cluster", "merge", "promote", "relations", "refresh")


def worker(n: int, cache_dir: Path) -> None:
    """One run in this process; prints one JSON line."""
    import pipeline_bench as pb
    from _pipeline_data import synthetic

    import cortexgraph

    memories, _ = synthetic(n)
    with tempfile.TemporaryDirectory(prefix="cg-ab-") as tmp:
        cpu0 = time.process_time()
        wall, _, report = pb.run_once(Path(tmp), memories, cache_dir)
        cpu = time.process_time() - cpu0
    out = {"wall": wall, "cpu": cpu, **report.seconds}
    out["refresh"] = pb.REFRESH_SECONDS[id(report)]
    out["notes"] = len(report.reports["promote"].promotions)
    out["merged"] = report.reports["merge"].count("merged")
    out["code"] = str(Path(cortexgraph.__file__).parent)
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", metavar="REV", help="the git revision to compare with")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/cgbench-cache"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.n, args.cache_dir)
        return
    if not args.baseline:
        ap.error("--baseline REV is required")
    console = Console(width=160)
    script = Path(__file__).resolve()
    console.print(f"[dim]filling the embedding cache for synthetic({args.n:,}) if needed ...[/]")
    build = ["--build-cache", str(args.n), "--cache-dir", str(args.cache_dir)]
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "pipeline_bench.py"), *build],
        check=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    worker_args = ["--worker", "--n", str(args.n), "--cache-dir", str(args.cache_dir)]
    with tempfile.TemporaryDirectory(prefix="cg-ab-code-") as tmp:
        label = f"baseline {args.baseline}"
        results = runs_in_turn(
            script, worker_args, args.baseline, Path(tmp), args.rounds, console, label
        )
    table = Table(
        title=f"{args.n:,} memories, warm cache, real vault and beads: min / median of "
        f"{args.rounds} (seconds; {machine_line()})"
    )
    table.add_column("code")
    for step in STEPS:
        table.add_column(step, justify="right")
    table.add_column("notes / merged", justify="right")
    medians = {
        label: {s: statistics.median(o[s] for o in runs) for s in STEPS}
        for label, runs in results.items()
    }
    for label, runs in results.items():
        cells = [f"{min(o[s] for o in runs):.2f} / {medians[label][s]:.2f}" for s in STEPS]
        table.add_row(label, *cells, f"{runs[0]['notes']:,} / {runs[0]['merged']:,}")
    base = medians[f"baseline {args.baseline}"]
    ratios = [
        f"{base[s] / medians['now'][s]:.2f}x" if medians["now"][s] > 0 else "-" for s in STEPS
    ]
    table.add_row("baseline / now (medians)", *ratios, "")
    console.print(table)


if __name__ == "__main__":
    main()
