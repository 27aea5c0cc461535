"""Promotion into a populated vault: N memories promoted through ``promote_memory`` with one
``ObsidianNoteSink`` into a vault that already holds M of the person's notes, then all of them
promoted again (the idempotent update pass).

    OMP_NUM_THREADS=1 python bench/vault_promote_bench.py [--notes 2000] [--memories 2000]

Baseline measured in the same run: the floor of the same file work without any lookup or
ledger (one atomic, fsynced write per note), so the ratio is what vault_sync adds on top.
Two sinks, each into a fresh copy of the vault: the interactive one (entity notes written with
each note) and the pipeline's (``batch=True``: each entity note written once per flush, and
one file-system sync per flush instead of an fsync per note).

``--baseline REV`` also runs a git revision's vault_sync (laid out as ``open_bench.py
--baseline`` does), both codes in fresh processes, in turn, for ``--rounds`` rounds, and prints
the median of each pass per code and their ratio: this VM's file-system speed moves by more
than a change to the code does (docs/pipeline.md, "Seventh round"), so only codes measured in
the same minutes compare.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from open_bench import runs_in_turn

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import ObsidianNoteSink, promote_memory

try:  # the vault's one writer
    from cortexgraph.vault_sync.atomic_file import atomic_write_text
except ImportError:  # a --baseline revision from before it left ledger.py
    from cortexgraph.vault_sync.ledger import atomic_write_text  # type: ignore[attr-defined,no-redef]

NOW = 1_760_000_000.0
PEOPLE = ["Sam", "Aisha", "Diego", "Mei", "Tom", "Kofi", "Elena", "Priya", "Lars", "Noor"]
TECH = ["PostgreSQL", "Redis", "Kafka", "Terraform", "Grafana", "Airflow", "Rust", "DuckDB"]


def make_vault(root: Path, n: int) -> None:
    for i in range(n):
        folder = root / f"area{i % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        body = " ".join(f"word{(i * 7 + k) % 997}" for k in range(150))
        fm = f"---\ntitle: note {i}\ntags: [t{i % 30}]\n---\n"
        (folder / f"note {i}.md").write_text(f"{fm}# note {i}\n\n{body}\n")


def make_store(n: int, rng: random.Random) -> InMemoryStore:
    store = InMemoryStore()
    ids = []
    for i in range(n):
        p, t = rng.choice(PEOPLE), rng.choice(TECH)
        m = store.save(
            f"Fact {i}: {p} chose {t} for service {i % 97}.",
            tags=["bench"],
            entities=[p, t],
            now=NOW - 86400,
        )
        ids.append(m.id)
        if i and i % 3 == 0:
            store.add_relation(m.id, ids[rng.randrange(i)], "related", now=NOW - 86400)
    return store


def run(notes: int, memories: int) -> list[tuple[str, float, float]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="cgpromote-") as tmp:
        root = Path(tmp)
        floor = root / "floor"
        floor.mkdir()
        t = time.perf_counter()
        for i in range(memories):
            atomic_write_text(floor / f"n{i}.md", f"---\nid: {i}\n---\nFact {i}\n")
        rows.append(("floor: atomic write only", time.perf_counter() - t, 1.0))
        base = rows[0][1]

        for kind, defer in (("interactive sink", False), ("pipeline sink", True)):
            vault = root / f"vault-{kind.split()[0]}"
            make_vault(vault, notes)
            store = make_store(memories, random.Random(7))
            ids = [m.id for m in store.list()]
            for label, when in (("first promotion", NOW), ("promote again", NOW + 60)):
                t = time.perf_counter()
                with ObsidianNoteSink(vault, "cortexgraph", batch=defer) as sink:
                    for mid in ids:
                        promote_memory(store, sink, mid, now=when, force=True)
                wall = time.perf_counter() - t
                rows.append((f"{label}, {kind}", wall, wall / base))
            found = sum(1 for _ in (vault / "cortexgraph").glob("*.md"))
            if found != memories:
                raise SystemExit(f"expected {memories} notes, found {found}: duplicates or losses")
    return rows


def worker(notes: int, memories: int) -> None:
    """``run`` in this process; prints one JSON line (the passes' walls, the code it ran)."""
    import cortexgraph

    rows = run(notes, memories)
    print(json.dumps({"rows": rows, "code": str(Path(cortexgraph.__file__).parent)}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=2000, help="the person's notes already there")
    ap.add_argument("--memories", type=int, default=2000, help="memories to promote")
    ap.add_argument("--baseline", metavar="REV", help="also run this git revision's code")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per code with --baseline")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.notes, args.memories)
        return
    title = f"Promote {args.memories:,} memories into a {args.notes:,}-note vault"
    if not args.baseline:
        print_table(title, run(args.notes, args.memories), args.memories)
        return
    console = Console(width=120)
    script = Path(__file__).resolve()
    worker_args = ["--worker", "--notes", str(args.notes), "--memories", str(args.memories)]
    with tempfile.TemporaryDirectory(prefix="cg-promote-code-") as tmp:
        runs = runs_in_turn(
            script, worker_args, args.baseline, Path(tmp), args.rounds, console, args.baseline
        )
    walls: dict[str, dict[str, list[float]]] = {label: {} for label in runs}
    for label, outputs in runs.items():
        for out in outputs:
            for name, wall, _ in out["rows"]:
                walls[label].setdefault(name, []).append(wall)
    table = Table(title=f"{title}: median of {args.rounds} rounds per code, in turn")
    for col in ("pass", "now ms / note", f"{args.baseline} ms / note", f"{args.baseline} / now"):
        table.add_column(col, justify="right")
    for name, now_walls in walls["now"].items():
        now = statistics.median(now_walls) * 1000 / args.memories
        then = statistics.median(walls[args.baseline][name]) * 1000 / args.memories
        table.add_row(name, f"{now:.2f}", f"{then:.2f}", f"{then / now:.2f}x")
    console.print(table)


def print_table(title: str, rows: list[tuple[str, float, float]], memories: int) -> None:
    table = Table(title=title)
    for col in ("pass", "wall s", "ms / note", "x floor"):
        table.add_column(col, justify="right")
    for label, wall, ratio in rows:
        ms = f"{1000 * wall / memories:.2f}"
        table.add_row(label, f"{wall:.2f}", ms, f"{ratio:.1f}")
    Console().print(table)


if __name__ == "__main__":
    main()
