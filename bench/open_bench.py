"""Opening a big store, cold (JSONL only) and from its index snapshot, in fresh processes.

    python bench/open_bench.py [--sizes 10000 100000] [--runs 5] [--baseline REV]
    python bench/open_bench.py --stores DIR [DIR ...] [--runs 5] [--baseline REV]

Each size: a store of ``storage_bench.make_dataset`` memories (12-40 words, two tags, ~584
bytes a line) written once; then ``--runs`` rounds of a cold open (the JSONL alone: records
parsed and built, the BM25 index tokenised), one first open (cold, then the snapshot written),
and ``--runs`` rounds of a reopen from the snapshot, each a fresh process
(bench/_open_worker.py); then ``--runs`` rounds of one memory in 100 touched and ``compact()``
(as ``cortexgraph-maintenance compact`` runs it), followed by the next process's open: the
first open a user meets after a compaction. With ``--baseline REV`` the code of that git
revision runs the same opens on its own copy of the store, in turn with today's in every
round, so the machine's load hits both alike; the ratio column is baseline / now of the best
CPU seconds.

With ``--stores DIR ...`` it opens copies of existing stores instead (a consolidation run's,
e.g. /tmp/cg-incr/snap-10000/store): each code first writes its own snapshot of the same
prefix the store's snapshot covers (its files cut there, opened once, the cut lines put back),
so every reopen applies the same lines past it, as the next run's open does; each round opens
a fresh copy (an open may rewrite the snapshot). The first search after the open is timed
apart: it unpickles the text index, which an open leaves until first use.

CPU seconds of the open alone (``time.process_time`` around ``JSONLStore(path)``; the imports
of numpy and the package are timed apart) are the steadier figure on a shared machine; wall
seconds are what a user waits. Issue 20's goals: cold open of 100k under 1 s, reopen from a
valid snapshot under 0.7 s.
"""

from __future__ import annotations

import argparse
import json
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line
from _reference import run_json
from _storage_worker import Ours
from storage_bench import make_dataset

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).resolve().parent / "_open_worker.py"
# The memories' and the relations' snapshot files (storage.index_snapshot, relation_snapshot)
SNAPSHOTS = (".cortexgraph-index.pickle", ".cortexgraph-relations.pickle")


def build_store(n: int, work: Path) -> tuple[Path, str]:
    """A store of ``n`` memories (the JSONL only: an empty store's open writes no snapshot)
    and a query for the first search."""
    dataset = work / f"dataset-{n}.json"
    make_dataset(n, 1, dataset)
    data = json.loads(dataset.read_text())
    path = work / f"store-{n}"
    Ours(str(path)).save_batch(data["memories"])  # as storage_bench writes its stores
    dataset.unlink()
    return path, data["queries"][0]


def baseline_code(rev: str, work: Path) -> Path:
    """A folder to put on PYTHONPATH that imports ``cortexgraph`` as revision ``rev`` has it:
    the revision's tree, its folders laid out under their import names (as .ci/mypy does)."""
    src = work / "baseline-src"
    src.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    package_dir = tomllib.loads((src / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    top = work / "baseline-path" / "cortexgraph"
    top.mkdir(parents=True)
    for f in (src / package_dir["cortexgraph"]).iterdir():
        (top / f.name).symlink_to(f)
    for name, folder in package_dir.items():
        parts = name.split(".")
        if len(parts) == 2 and parts[0] == "cortexgraph":
            (top / parts[1]).symlink_to(src / folder, target_is_directory=True)
    return top.parent


def run_with_code(script: Path, args: list[str], code: Path | None) -> dict:
    """Run a worker ``script`` that prints one JSON line with the folder it imported
    ``cortexgraph`` from ("code"), on ``code`` (a ``baseline_code`` folder; None: this tree),
    and check that it ran that code."""
    env = {"PYTHONPATH": str(code)} if code is not None else {}
    out = run_json(sys.executable, script, *args, env=env)
    expected = code if code is not None else ROOT
    if not Path(out["code"]).is_relative_to(expected):  # the layout's symlinks, unresolved
        raise RuntimeError(f"the worker imported {out['code']}, not the code under {expected}")
    return out


def runs_in_turn(
    script: Path,
    args: list[str],
    rev: str,
    work: Path,
    rounds: int,
    console: Console,
    label: str,
) -> dict[str, list[dict]]:
    """``script`` run ``rounds`` times on this tree ("now") and on revision ``rev``'s code
    (``label``), the two in turn in fresh processes, the first of each round alternating (a
    shared machine's slow minutes then hit both alike): each one's outputs, in round order."""
    codes = {"now": None, label: baseline_code(rev, work)}
    results: dict[str, list[dict]] = {name: [] for name in codes}
    for r in range(rounds):
        order = list(codes.items()) if r % 2 == 0 else list(codes.items())[::-1]
        for name, code in order:
            console.print(f"[dim]  round {r + 1}/{rounds}: {name}[/]")
            results[name].append(run_with_code(script, args, code))
    return results


def open_once(mode: str, store: Path, query: str, code: Path | None) -> dict:
    return run_with_code(WORKER, [mode, str(store), query], code)


def snapshot_cut(store: Path, name: str) -> int | None:
    """Bytes of its JSONL file that the store's snapshot ``name`` covers (None: none)."""
    try:
        with (store / name).open("rb") as f:
            size = pickle.load(f).get("size")
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError):
        return None
    return size if isinstance(size, int) else None


def prepared_copy(source: Path, dest: Path, query: str, code: Path | None) -> Path:
    """A copy of the store ``source`` whose snapshots ``code`` wrote, over the same prefixes
    of its files as ``source``'s snapshots cover: the files cut there, opened once (a cold
    open writes the snapshots), then the cut lines put back."""
    dest.mkdir(parents=True)
    tails: dict[str, bytes] = {}
    for jsonl, snapshot in (("memories.jsonl", SNAPSHOTS[0]), ("relations.jsonl", SNAPSHOTS[1])):
        if not (source / jsonl).exists():
            continue
        data = (source / jsonl).read_bytes()
        cut = snapshot_cut(source, snapshot) or len(data)
        (dest / jsonl).write_bytes(data[:cut])
        tails[jsonl] = data[cut:]
    open_once("first", dest, query, code)
    for jsonl, tail in tails.items():
        with (dest / jsonl).open("ab") as f:
            f.write(tail)
    return dest


def store_rows(args: argparse.Namespace, console: Console, table: Table) -> None:
    """``--stores``: reopen copies of existing stores, each code from its own snapshots."""
    with tempfile.TemporaryDirectory(prefix="cg-open-") as tmp:
        work = Path(tmp)
        codes: list[tuple[str, Path | None]] = [("now", None)]
        if args.baseline:
            codes.append((f"baseline {args.baseline}", baseline_code(args.baseline, work)))
        query = "kafka migration"
        for source in map(Path, args.stores):
            results: dict[str, list[dict]] = {label: [] for label, _ in codes}
            prepared = {}
            for i, (label, code) in enumerate(codes):
                console.print(f"[dim]{source}: {label}'s snapshots ...[/]")
                prepared[label] = prepared_copy(source, work / f"prepared-{i}", query, code)
            for r in range(args.runs):
                order = codes if r % 2 == 0 else codes[::-1]
                for label, code in order:
                    console.print(f"[dim]  reopen {r + 1}/{args.runs}: {label}[/]")
                    copy = work / "copy"
                    shutil.copytree(prepared[label], copy)
                    results[label].append(open_once("reopen", copy, query, code))
                    shutil.rmtree(copy)
            med = {
                label: statistics.median(o["open_cpu"] for o in runs)
                for label, runs in results.items()
            }
            for label, runs in results.items():
                base = med[codes[-1][0]] if len(codes) > 1 and label == "now" else None
                table.add_row(
                    source.name if source.name != "store" else source.parent.name,
                    f"{runs[0]['memories']:,}",
                    label,
                    span([o["open_cpu"] for o in runs], 3),
                    span([o["open_wall"] for o in runs], 3),
                    span([o["first_search_ms"] for o in runs], 1),
                    f"{statistics.median(o['open_page_faults'] for o in runs):,.0f}",
                    f"{max(o['peak_rss_mb'] for o in runs):.0f}",
                    "-" if base is None else f"{base / med[label]:.2f}x",
                )
            table.add_section()


def span(values: list[float], digits: int = 2) -> str:
    return f"{min(values):.{digits}f} / {statistics.median(values):.{digits}f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--runs", type=int, default=5, help="rounds of cold opens and of reopens")
    ap.add_argument("--baseline", metavar="REV", help="also run this git revision's code")
    ap.add_argument("--stores", nargs="+", metavar="DIR", help="reopen copies of these stores")
    args = ap.parse_args()
    console = Console(width=180)
    if args.stores:
        table = Table(
            title=f"Reopening existing stores from their snapshots, fresh processes, min / "
            f"median of {args.runs} (seconds; {machine_line()})"
        )
        for col in (
            "store",
            "memories",
            "code",
            "open CPU",
            "open wall",
            "first search ms",
            "page faults",
            "peak RSS MB",
            "x baseline (median CPU)",
        ):
            table.add_column(col, justify="right")
        store_rows(args, console, table)
        console.print(table)
        return
    table = Table(
        title=f"Opening a store, fresh processes, min / median of {args.runs} "
        f"(seconds; {machine_line()})"
    )
    for col in (
        "memories",
        "code",
        "cold open CPU",
        "cold open wall",
        "first open wall (+ snapshot write)",
        "reopen CPU (snapshot)",
        "reopen wall",
        "first search after reopen ms",
        "imports CPU",
        "peak RSS MB (reopen)",
        "compact wall",
        "first open after compact, wall",
        "x baseline (CPU: cold, reopen)",
    ):
        table.add_column(col, justify="right")
    with tempfile.TemporaryDirectory(prefix="cg-open-") as tmp:
        work = Path(tmp)
        codes: list[tuple[str, Path | None]] = [("now", None)]
        if args.baseline:
            codes.append((f"baseline {args.baseline}", baseline_code(args.baseline, work)))
        for n in args.sizes:
            console.print(f"[dim]{n:,} memories: writing the store ...[/]")
            source, query = build_store(n, work)
            stores = {}
            for label, _ in codes:
                stores[label] = work / f"{n}-{label.replace(' ', '-')}"
                shutil.copytree(source, stores[label])
            shutil.rmtree(source)
            results: dict[str, dict[str, list[dict]]] = {label: {} for label, _ in codes}
            # cold opens first (no snapshot yet), then the one that writes it, then reopens
            # and last, rounds of a compaction and the first open after it
            plan = [
                (("cold",), args.runs),
                (("first",), 1),
                (("reopen",), args.runs),
                (("compact", "after compact"), args.runs),
            ]
            for modes, rounds in plan:
                for r in range(rounds):
                    for label, code in codes:
                        for mode in modes:
                            console.print(f"[dim]  {mode} {r + 1}/{rounds}: {label}[/]")
                            worker_mode = "reopen" if mode == "after compact" else mode
                            out = open_once(worker_mode, stores[label], query, code)
                            if out["memories"] != n:
                                raise RuntimeError(f"{label} opened {out['memories']} memories")
                            results[label].setdefault(mode, []).append(out)
            best = {
                label: {m: min(o["open_cpu"] for o in runs) for m, runs in by_mode.items()}
                for label, by_mode in results.items()
            }
            for label, by_mode in results.items():
                base = best[codes[-1][0]] if len(codes) > 1 and label == "now" else None
                table.add_row(
                    f"{n:,}",
                    label,
                    span([o["open_cpu"] for o in by_mode["cold"]]),
                    span([o["open_wall"] for o in by_mode["cold"]]),
                    f"{by_mode['first'][0]['open_wall']:.2f}",
                    span([o["open_cpu"] for o in by_mode["reopen"]]),
                    span([o["open_wall"] for o in by_mode["reopen"]]),
                    span([o["first_search_ms"] for o in by_mode["reopen"]], 1),
                    span([o["import_cpu"] for o in by_mode["cold"] + by_mode["reopen"]]),
                    f"{max(o['peak_rss_mb'] for o in by_mode['reopen']):.0f}",
                    span([o["compact_wall"] for o in by_mode["compact"]]),
                    span([o["open_wall"] for o in by_mode["after compact"]]),
                    "-"
                    if base is None
                    else f"{base['cold'] / best[label]['cold']:.2f}x, "
                    f"{base['reopen'] / best[label]['reopen']:.2f}x",
                )
            table.add_section()
    console.print(table)


if __name__ == "__main__":
    main()
