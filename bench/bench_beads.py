"""How much one tracked change costs, against writing the same file without git.

    OMP_NUM_THREADS=1 python bench/bench_beads.py [--sizes 0 1000 5000] [--ops 30]

For each existing issue count: the mean time of a create, a claim and a close through
BeadsTracker (lock + read + atomic write + GitPython commit), next to the baseline of
atomically rewriting the same issues.jsonl alone (IssueFile.write, no git), measured in the
same run on the same disk. Ratio = tracked / baseline.
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

from storage.beads import open_tracker
from storage.beads.issue_file import IssueFile


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 1000, 5000])
    parser.add_argument("--ops", type=int, default=30)
    args = parser.parse_args()
    Console().print(run(args.sizes, args.ops))


if __name__ == "__main__":
    main()
