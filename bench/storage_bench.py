"""Storage benchmark: cortexgraph 2 vs the reference 1.2.1, side by side in one run.

    python bench/storage_bench.py [--sizes 1000,10000,100000] [--queries 200]

For each size: save throughput (one save at a time, the first 2,000), load time (cold: ours
reads the JSONL alone; first open: ours loads the JSONL and writes its index snapshot; reopen:
ours reads the snapshot) and the first search after each, RSS growth
from loading, search p50/p95 over two-word queries, and search quality (a memory queried by
a word only it contains must come back first). Each phase runs in a fresh process; the
reference runs in its own venv (see ``_reference.py``). Targets: load 100k < 2 s, save p50
< 1 ms, search p50 < 5 ms at 10k and < 30 ms at 100k.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _reference import reference_python, run_json

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).resolve().parent / "_storage_worker.py"
SYLLABLES = "ka lo mi ne ru sa te vi po da fe gu ho ji ba ce do fi".split()
TOPICS = (
    "decision meeting database deploy python rust api design budget client release "
    "incident review onboarding postgres redis kafka billing ledger editor"
).split()


def make_dataset(n: int, queries: int, out: Path) -> None:
    rng = random.Random(n)
    vocab = sorted({"".join(rng.choices(SYLLABLES, k=rng.randint(2, 3))) for _ in range(4000)})
    vocab += TOPICS
    memories, unique = [], {}
    for i in range(n):
        word = "zq" + "".join("abcdefghijklmnopqrstuvwxy"[int(c)] for c in f"{i:07d}")
        unique[word] = i
        words = rng.choices(vocab, k=rng.randint(12, 40))
        words.insert(rng.randrange(len(words)), word)
        memories.append(
            {
                "id": f"00000000-0000-4000-8000-{i:012d}",
                "content": " ".join(words),
                "tags": rng.sample(["work", "home", "project-x", "ideas", "people"], 2),
                "t": 1_700_000_000 + i * 30,
                "unique": word,
            }
        )
    qs = [" ".join(rng.sample(TOPICS + vocab[:200], 2)) for _ in range(queries)]
    out.write_text(json.dumps({"memories": memories, "unique": unique, "queries": qs}))


def measure(impl: str, python: Path, dataset: Path, work: Path) -> dict:
    isolated = impl == "reference"
    cwd = None if isolated else ROOT
    store = work / impl
    out = run_json(
        python, WORKER, "write", impl, str(dataset), str(store), isolated=isolated, cwd=cwd
    )
    if impl == "ours":  # JSONL only, before the first open below writes the index snapshot
        out |= run_json(python, WORKER, "cold", impl, str(dataset), str(store), cwd=cwd)
    out |= run_json(
        python, WORKER, "search", impl, str(dataset), str(store), isolated=isolated, cwd=cwd
    )
    return out


def ratio(ours: float, ref: float, higher_is_better: bool) -> str:
    if not ours or not ref:
        return "-"
    r = ours / ref if higher_is_better else ref / ours
    return f"{r:.1f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    ref_python = reference_python()
    console = Console()
    table = Table(title="storage: cortexgraph 2 (ours) vs 1.2.1 (reference)")
    for col in ("size", "metric", "ours", "1.2.1", "ours better by"):
        table.add_column(col, justify="right")
    metrics = [
        ("saves/s (single)", "saves_per_s", "{:,.0f}", True),
        ("save p50 ms", "save_p50_ms", "{:.3f}", False),
        ("cold open s (JSONL only; 1.2.1: load)", "cold_s", "{:.2f}", False),
        ("first search after it ms", "cold_first_search_ms", "{:.2f}", False),
        ("load s (first open)", "load_s", "{:.2f}", False),
        ("reopen s (ours: snapshot)", "reopen_s", "{:.2f}", False),
        ("first search after reopen ms", "reopen_first_search_ms", "{:.2f}", False),
        ("RSS after load MB", "rss_mb", "{:.0f}", False),
        ("search p50 ms", "search_p50_ms", "{:.2f}", False),
        ("search p95 ms", "search_p95_ms", "{:.2f}", False),
        ("unique word found first %", "found_first_pct", "{:.0f}", True),
    ]
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="cg-bench-") as tmp:
            work = Path(tmp)
            dataset = work / "dataset.json"
            make_dataset(n, args.queries, dataset)
            console.print(f"[dim]measuring {n:,} memories ...[/dim]")
            ours = measure("ours", Path(sys.executable), dataset, work)
            ref = measure("reference", ref_python, dataset, work)
        for label, key, fmt, higher in metrics:
            # 1.2.1 has one kind of open: its load stands beside our cold open.
            ref_value = ref.get("load_s" if key == "cold_s" else key)
            table.add_row(
                f"{n:,}",
                label,
                fmt.format(ours[key]),
                "-" if ref_value is None else fmt.format(ref_value),
                ratio(ours[key], ref_value or 0.0, higher),
            )
        table.add_section()
    console.print(table)


if __name__ == "__main__":
    main()
