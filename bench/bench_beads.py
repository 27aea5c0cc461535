"""How much tracked changes cost: one at a time, in a batch, and in a real consolidation run.

    OMP_NUM_THREADS=1 python bench/bench_beads.py [--sizes 0 1000 5000] [--ops 30]
    python bench/bench_beads.py --batch 10000          # 10k changes of each kind in batches
    python bench/bench_beads.py --cli 10000            # cortexgraph-consolidate --json, cold

Single changes: for each existing issue count, the mean time of a create, a claim and a close
through BeadsTracker (lock + read + atomic write + GitPython commit), next to the baseline of
atomically rewriting the same issues.jsonl alone (IssueFile.write, no git), measured in the
same run on the same disk. Ratio = tracked / baseline.

``--batch N``: N creates in one ``tracker.batch``, then N claims and N closes in another (what
the decay, cluster and merge agents do): seconds, changes per second, commits made.

``--cli N``: a fresh store of ``synthetic(N)`` memories (bench/_pipeline_data.py), dated
relative to the clock as pipeline_bench dates them relative to its run (up to 30 days old, so
promotion writes notes into the vault), an empty embedding cache, a fresh vault, default
settings, then the installed ``cortexgraph-consolidate --json`` in a child process (the real
beads tracker, as a user runs it): wall time, the child's peak RSS, per-agent seconds from its
JSON, the vault's notes (promoted memories and entity notes), issues and git commits made.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cortexgraph.storage.beads import open_tracker
from cortexgraph.storage.beads.issue_file import IssueFile


def _seed(store: Path, n: int) -> None:
    """n issues written straight into the file and committed once."""
    tracker = open_tracker(store, search_parents=False)
    tracker.create("seed")
    lines = [tracker.path.read_text().strip()]
    base = json.loads(lines[0])
    for i in range(n - 1):
        rec = dict(base, id=f"cg-s{i:06d}", title=f"seeded issue {i}", labels=["bench"])
        rec["metadata"] = {"memory_ids": [f"m{i}", f"m{i + 1}"], "score": 0.5}
        lines.append(json.dumps(rec, separators=(",", ":")))
    tracker.path.write_text("\n".join(lines) + "\n")
    tracker.update(base["id"], priority=3)  # commits the seeded file


def _mean_ms(samples: list[float]) -> float:
    return statistics.fmean(samples) * 1000


def run(sizes: list[int], ops: int) -> Table:
    table = Table(title=f"beads tracker: ms per change ({ops} ops each)")
    for col in ("issues", "file KB", "baseline write", "create", "claim", "close", "query"):
        table.add_column(col, justify="right")
    table.add_column("create / baseline", justify="right")
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp) / "store"
            if n:
                _seed(store, n)
            tracker = open_tracker(store, search_parents=False)
            tracker.query()
            raw = IssueFile(tracker.path)
            snap = raw.load()
            base: list[float] = []
            for _ in range(ops):
                t = time.perf_counter()
                raw.write(snap)
                base.append(time.perf_counter() - t)
            times: dict[str, list[float]] = {"create": [], "claim": [], "close": [], "query": []}
            ids = []
            for i in range(ops):
                t = time.perf_counter()
                ids.append(tracker.create(f"bench issue {i}", labels=["bench:new"]).id)
                times["create"].append(time.perf_counter() - t)
            for issue_id in ids:
                t = time.perf_counter()
                tracker.claim(issue_id, "bench")
                times["claim"].append(time.perf_counter() - t)
            for issue_id in ids:
                t = time.perf_counter()
                tracker.close(issue_id, "benchmarked")
                times["close"].append(time.perf_counter() - t)
            for _ in range(ops):
                t = time.perf_counter()
                tracker.query(labels=["bench:new"], status="closed")
                times["query"].append(time.perf_counter() - t)
            size_kb = tracker.path.stat().st_size / 1024
            b = _mean_ms(base)
            c = _mean_ms(times["create"])
            table.add_row(
                str(n),
                f"{size_kb:.0f}",
                f"{b:.2f}",
                f"{c:.2f}",
                f"{_mean_ms(times['claim']):.2f}",
                f"{_mean_ms(times['close']):.2f}",
                f"{_mean_ms(times['query']):.2f}",
                f"{c / b:.1f}x",
            )
    return table


def batch_table(n: int) -> Table:
    table = Table(title=f"beads tracker: {n:,} changes of each kind in one batch per agent")
    for col in ("step", "changes", "seconds", "ms / change", "changes / s", "commits"):
        table.add_column(col, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        tracker = open_tracker(Path(tmp) / "store", search_parents=False)
        commits = 0

        def row(step: str, changes: int, seconds: float) -> None:
            nonlocal commits
            made = len(list(tracker.repo.iter_commits())) - commits
            commits += made
            table.add_row(
                step,
                f"{changes:,}",
                f"{seconds:.2f}",
                f"{seconds / changes * 1e3:.3f}",
                f"{changes / seconds:,.0f}",
                str(made),
            )

        t = time.perf_counter()
        with tracker.batch("cluster-detector"):
            ids = [
                tracker.create(
                    f"Merge {i} similar memories",
                    labels=["consolidation:merge"],
                    metadata={"memory_ids": [f"m{i}", f"m{i + 1}"]},
                    dedupe_key=f"cluster:{i}",
                ).id
                for i in range(n)
            ]
        row("create (open)", n, time.perf_counter() - t)
        t = time.perf_counter()
        with tracker.batch("semantic-merge"):
            for issue_id in ids:
                tracker.claim(issue_id, "semantic-merge")
                tracker.close(issue_id, "merged")
        row("claim + close", 2 * n, time.perf_counter() - t)
    return table


def cli_table(n: int) -> Table:
    """The real CLI on a fresh synthetic store, cold, default settings (see the docstring)."""
    import os
    import subprocess
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _machine import machine_line

    table = Table(
        title=f"cortexgraph-consolidate --json on synthetic({n:,}) dated up to 30 days ago, "
        f"cold, defaults; "
        f"{machine_line()}"
    )
    for col in (
        "memories",
        "wall s",
        "peak RSS MiB",
        "decay",
        "cluster",
        "merge",
        "promote",
        "relations",
        "vault notes",
        "issues",
        "git commits",
    ):
        table.add_column(col, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        store, vault = Path(tmp) / "store", Path(tmp) / "vault"
        # Written by a child: a child's peak RSS (ru_maxrss) starts from its parent's RSS at
        # the fork, so this process must not hold the store when the CLI starts.
        bench_dir = str(Path(__file__).resolve().parent)
        subprocess.run(
            [
                sys.executable,
                "-c",
                f"import sys, time; sys.path.insert(0, {bench_dir!r})\n"
                "from _pipeline_data import NOW, synthetic\n"
                "from cortexgraph.storage import open_store\n"
                # as old, relative to the clock, as pipeline_bench's memories at its run time
                "shift = int(time.time()) - (NOW + 3600)\n"
                f"open_store({str(store)!r}).put_many(m.with_changes(created_at=m.created_at"
                f" + shift, last_used=m.last_used + shift) for m in synthetic({n})[0])",
            ],
            check=True,
        )
        exe = Path(sys.executable).with_name("cortexgraph-consolidate")
        vault.mkdir(parents=True, exist_ok=True)  # a named vault must exist
        env = {
            **os.environ,
            "CORTEXGRAPH_STORAGE_PATH": str(store),
            "CORTEXGRAPH_LTM_VAULT_PATH": str(vault),
        }
        out_path, err_path = Path(tmp) / "out", Path(tmp) / "err"
        with out_path.open("w") as out, err_path.open("w") as err:
            t = time.perf_counter()
            cli = subprocess.Popen([str(exe), "--json"], env=env, stdout=out, stderr=err)
            # this child's own rusage (RUSAGE_CHILDREN would be the peak of every child)
            _, status, usage = os.wait4(cli.pid, 0)
            wall = time.perf_counter() - t
        cli.returncode = os.waitstatus_to_exitcode(status)
        if cli.returncode != 0:
            raise SystemExit(f"cortexgraph-consolidate failed:\n{err_path.read_text()[-2000:]}")
        report = json.loads(out_path.read_text().strip().splitlines()[-1])
        peak = usage.ru_maxrss / 1024
        tracker = open_tracker(store, search_parents=False, init=False)
        seconds = report["seconds"]
        table.add_row(
            f"{n:,}",
            f"{wall:.1f}",
            f"{peak:.0f}",
            *(
                f"{seconds.get(a, 0):.1f}"
                for a in ("decay", "cluster", "merge", "promote", "relations")
            ),
            f"{sum(1 for _ in vault.rglob('*.md')):,}",
            f"{len(tracker.query()):,}",
            str(len(list(tracker.repo.iter_commits()))),
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 1000, 5000])
    parser.add_argument("--ops", type=int, default=30)
    parser.add_argument("--batch", type=int, metavar="N", help="N changes of each kind, batched")
    parser.add_argument("--cli", type=int, metavar="N", help="the consolidate CLI on N memories")
    args = parser.parse_args()
    if args.batch:
        Console(width=160).print(batch_table(args.batch))
    elif args.cli:
        Console(width=160).print(cli_table(args.cli))
    else:
        Console().print(run(args.sizes, args.ops))


if __name__ == "__main__":
    main()
