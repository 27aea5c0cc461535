"""Peers side by side: cortexgraph, cortexgraph 1.2.1 and basic-memory, each through its own
MCP server over stdio, on the same work, in one table.

Each peer runs from its own virtualenv (bench/_peers_systems.py; 1.2.1 and basic-memory are
installed under /tmp on first use, never as our dependencies) with its default settings. The
work (bench/_peers_work.py): start-up to tools/list (median of fresh processes), saves into a
growing store with their p50/p95 and, at each size, 200 searches (p50/p95, hit@10), and LoCoMo
dev through the shared locomo_mcp.py method (R@5, MRR). A step a peer cannot do here says why
in its cell instead of stopping the run.

    .venv/bin/python bench/peers_bench.py                                    # 1k and 10k, dev
    .venv/bin/python bench/peers_bench.py --sizes 1000 --limit-conversations 1   # quick
    .venv/bin/python bench/peers_bench.py --only basic --json /tmp/peers.json

The LoCoMo data is read from ../shared/data and never copied into the repository.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _peers_systems import PEERS, Peer, remove
from _peers_work import load_average, locomo, startup, writes
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "locomo_dev" / "locomo_dev.json"
SCORER = ROOT.parent / "shared" / "bench" / "locomo_retrieval.py"


def load_scorer(path: Path = SCORER) -> ModuleType:
    spec = importlib.util.spec_from_file_location("locomo_retrieval", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import the shared scorer {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _failure(e: BaseException) -> str:
    """One short line for a cell: the innermost error of an exception group."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return f"failed: {type(e).__name__}: {str(e)[:120]}"


def run_peer(
    peer: Peer,
    args: argparse.Namespace,
    lr: ModuleType | None,
    convs: list[dict[str, Any]],
    progress: Progress,
    res: dict[str, Any],
    checkpoint: Callable[[], None],
) -> None:
    """Fills ``res`` step by step (start-up, LoCoMo, writes: the longest last), checkpointing
    after each step and each size mark, so a run cut short keeps what it measured."""
    reason = peer.prepare()
    if reason:
        res["unavailable"] = reason
        return
    root = Path(tempfile.mkdtemp(prefix="cg-peers-"))
    res["writes"], res["locomo"] = {}, {}
    steps: list[tuple[str, int, Callable[[Callable[[int], None]], Any]]] = [
        ("startup", args.startups, lambda tick: startup(peer, root, args.startups, tick))
    ]
    if lr is not None:
        work = sum(len(c["memories"]) + len(c["questions"]) for c in convs)
        steps.append(
            (
                "locomo",
                work,
                lambda tick: locomo(peer, root, lr, convs, tick, res["locomo"], checkpoint),
            )
        )
    steps.append(
        (
            "writes",
            max(args.sizes) + args.queries * len(args.sizes),
            lambda tick: writes(
                peer, root, args.sizes, args.queries, tick, res["writes"], checkpoint
            ),
        )
    )
    try:
        for step, total, fn in steps:
            task = progress.add_task(f"{peer.name}: {step}", total=total)
            t = time.perf_counter()
            try:
                res[step] = fn(lambda n, task=task: progress.advance(task, n))
            except Exception as e:  # one peer's failed step is a cell, not the end of the run
                if step in ("writes", "locomo"):  # keeps what it measured before
                    res[step]["error"] = _failure(e)
                else:
                    res[step] = {"error": _failure(e)}
                traceback.print_exc(file=sys.stderr)
            res[f"{step}_s"] = time.perf_counter() - t
            progress.update(task, completed=total)
            checkpoint()
    finally:
        remove(root)


def _ms(d: dict[str, Any], a: str, b: str) -> str:
    return f"{d[a]:.1f} / {d[b]:.1f}"


def print_table(results: list[dict[str, Any]], args: argparse.Namespace, header: str) -> None:
    table = Table(title="Peers through their own MCP servers over stdio, same work", caption=header)
    table.add_column("system", justify="left")
    table.add_column(f"start-up to tools/list ms (median of {args.startups})", justify="right")
    for n in sorted(args.sizes):
        table.add_column(f"write p50 / p95 ms (0→{n:,})", justify="right")
        table.add_column(f"search p50 / p95 ms at {n:,}", justify="right")
        table.add_column(f"hit@10 at {n:,}", justify="right")
    if not args.no_locomo:
        table.add_column("LoCoMo dev R@5", justify="right")
        table.add_column("MRR", justify="right")
    for r in results:
        if "unavailable" in r:
            width = 1 + 3 * len(args.sizes) + (0 if args.no_locomo else 2)
            table.add_row(r["name"], *([r["unavailable"]] + [""] * (width - 1)))
            continue
        s = r.get("startup", {"error": "not run"})
        cells = [s.get("error") or f"{s['startup_ms']:.0f}"]
        w = r.get("writes", {})
        for n in sorted(args.sizes):
            if n not in w:
                cells += [w.get("error", "not reached"), "", ""]
            else:
                d = w[n]
                cells += [
                    _ms(d, "write_p50_ms", "write_p95_ms"),
                    _ms(d, "search_p50_ms", "search_p95_ms"),
                    f"{d['hit_at_10']:.2f}",
                ]
        if not args.no_locomo:
            lo = r.get("locomo") or {"error": "not run"}
            if "R@5" not in lo:
                cells += [lo.get("error", "not run"), ""]
            else:
                part = lo.get("conversations", 0) < lo.get("of_conversations", 0)
                label = f" ({lo['conversations']}/{lo['of_conversations']} conv.)" if part else ""
                cells += [f"{lo['R@5']:.3f}{label}", f"{lo['MRR']:.3f}"]
        table.add_row(r["name"], *cells)
    console = Console(width=240)
    console.print(table)
    for r in results:
        for note in r.get("locomo", {}).get("notes", []):
            console.print(f"  {r['name']}: {note}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    ap.add_argument("--queries", type=int, default=200, help="searches at each size")
    ap.add_argument("--startups", type=int, default=5, help="fresh processes for start-up")
    ap.add_argument("--limit-conversations", type=int, default=0)
    ap.add_argument("--no-locomo", action="store_true")
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--only", default="", help="run the peers whose name contains this")
    ap.add_argument("--json", default="", help="write the results here as they come")
    ap.add_argument("--table-from", default="", help="print the table of a --json file and exit")
    args = ap.parse_args(argv)

    if args.table_from:
        saved = json.loads(Path(args.table_from).read_text(encoding="utf-8"))
        for key in ("sizes", "startups", "no_locomo"):
            setattr(args, key, saved["args"][key])
        for r in saved["results"]:
            r["writes"] = {
                (int(k) if k.isdigit() else k): v for k, v in r.get("writes", {}).items()
            }
        print_table(saved["results"], args, saved["header"] + " (from " + args.table_from + ")")
        return 0

    lr, convs = None, []
    if not args.no_locomo:
        lr = load_scorer()
        convs, _ = lr.load_locomo(args.data, [1, 2, 3, 4])
        if args.limit_conversations:
            convs = convs[: args.limit_conversations]
    peers = [p for p in PEERS if args.only.lower() in p.name.lower()]
    results: list[dict[str, Any]] = [{"name": p.name} for p in peers]
    t0 = time.perf_counter()

    def header() -> str:
        questions = sum(len(c["questions"]) for c in convs)
        return (
            f"{platform.node()}: {platform.machine()}, {os.cpu_count()} CPUs, load average "
            f"{load_before} before, {load_average()} now; {time.perf_counter() - t0:.0f} s; "
            + ("LoCoMo off" if args.no_locomo else f"LoCoMo {len(convs)} conv., {questions} q.")
        )

    def checkpoint() -> None:
        if args.json:
            record = {"args": vars(args), "header": header(), "results": results}
            Path(args.json).write_text(json.dumps(record, indent=1, default=str), "utf-8")

    load_before = load_average()
    with Progress(
        "{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
    ) as progress:
        for peer, res in zip(peers, results, strict=True):
            run_peer(peer, args, lr, convs, progress, res, checkpoint)
    print_table(results, args, header())
    checkpoint()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
