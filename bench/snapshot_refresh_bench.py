"""The store's snapshot refreshed by the process that appended, against by the next open.

    python bench/snapshot_refresh_bench.py --store /tmp/cg-incr/snap-100000/store \\
        --work /tmp/cg-idle [--saves 1000] [--runs 3]

From a copy of ``--store`` (opened once first, so its snapshot covers the whole file): this
process saves ``--saves`` memories (bench/_pipeline_data.synthetic's texts, tags and entities,
as the MCP server saves them), then, each round on fresh copies of that state:

- without: the next process opens the store (bench/_open_worker.py, a fresh process): the
  lines past the snapshot exceed ``snapshot_refresh_bytes``, so that open rewrites it;
- with: ``refresh_snapshots`` (storage/snapshot_refresh.py) in a thread of the process that
  saved, as the MCP server calls it once its writes settle, while the main thread saves one
  memory after another and times each save; then the next process opens the store.

Printed: the open's CPU and wall seconds in both cases, the refresh's own wall and thread CPU,
and the saves made meanwhile (count, median, slowest, how many over 50 ms) against the same
number of saves made without a refresh: how long a save waits on it (the store's lock while
the view is taken, and the interpreter's lock while the refresh pickles).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line
from _pipeline_data import synthetic
from _reference import run_json

WORKER = Path(__file__).resolve().parent / "_open_worker.py"


def open_in_fresh_process(store: Path) -> dict:
    return run_json(sys.executable, WORKER, "reopen", str(store), "kayak")


def current_copy(source: Path, work: Path) -> Path:
    """A copy of ``source`` whose snapshot covers its whole memories file."""
    base = work / "base"
    shutil.rmtree(base, ignore_errors=True)
    shutil.copytree(source, base)
    open_in_fresh_process(base)  # rewrites a stale snapshot
    return base


def save_new(store, saves: int) -> None:
    """``saves`` new memories, as the MCP server saves them, then each written again with its
    entities read, as the server's entity-reading child does."""
    n = len(store)
    memories, _ = synthetic(n + saves + 2_000)
    saved = [
        store.save(m.content, tags=m.meta.tags, entities=m.entities)
        for m in memories[n : n + saves]
    ]
    store.update_many({m.id: {"extra": {"entities_found": "spacy+rules"}} for m in saved})


def timed_saves(store, texts: list[str], stop: threading.Event | None) -> list[float]:
    """Seconds from when each save was due (2 ms after the last one ended) until it ended:
    a wait for the interpreter's lock while this thread sleeps counts too. With ``stop``,
    until it is set."""
    times = []
    for text in texts:
        if stop is not None and stop.is_set():
            break
        due = time.perf_counter() + 0.002  # a little room between calls, as requests have
        time.sleep(0.002)
        store.save(text, tags=["bench"])
        times.append(time.perf_counter() - due)
    return times


def one_round(base: Path, work: Path, saves: int, texts: list[str]) -> dict:
    """The server's store (opened before the saves), the saves; the next open without the
    refresh (on a copy of the files then) and with it."""
    from cortexgraph.storage import JSONLStore

    server = work / "server"
    shutil.rmtree(server, ignore_errors=True)
    shutil.copytree(base, server)
    store = JSONLStore(server)
    save_new(store, saves)
    tails = store.snapshot_tails()
    without = work / "without"
    shutil.rmtree(without, ignore_errors=True)
    shutil.copytree(server, without)
    plain = open_in_fresh_process(without)
    alone = timed_saves(store, texts[:400], None)
    stop, result = threading.Event(), {}

    def refresh() -> None:
        c0, w0 = time.thread_time(), time.perf_counter()
        result["written"] = store.refresh_snapshots(store.config.snapshot_refresh_bytes // 4)
        result["refresh_cpu"], result["refresh_wall"] = (
            time.thread_time() - c0,
            time.perf_counter() - w0,
        )
        stop.set()

    thread = threading.Thread(target=refresh)
    thread.start()
    during = timed_saves(store, texts[400:], stop)
    thread.join()
    fresh = open_in_fresh_process(server)
    return {
        **result,
        "tail": tails[".cortexgraph-index.pickle"],
        "without": plain,
        "with": fresh,
        "alone": alone[: len(during)],
        "during": during,
    }


def ms(values: list[float]) -> str:
    if not values:
        return "-"
    slow = sum(v > 0.05 for v in values)
    return (
        f"{len(values)}: {statistics.median(values) * 1e3:.1f} / {max(values) * 1e3:.0f} ms"
        f", {slow} > 50 ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, required=True, help="a store directory to copy")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--saves", type=int, default=1_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    work = args.work / f"refresh-{args.store.parent.name}"
    work.mkdir(parents=True, exist_ok=True)
    base = current_copy(args.store, work)
    texts = [f"bench save {i} about the kayak trip on the lake" for i in range(5_000)]
    console = Console(width=180)
    table = Table(title=f"{args.store} + {args.saves} saves, {args.runs} rounds ({machine_line()})")
    for col in (
        "round",
        "bytes past the snapshot",
        "open without: CPU / wall s",
        "refresh: thread CPU / wall s",
        "open with: CPU / wall s",
        "saves during the refresh: n: median / max",
        "as many saves alone",
    ):
        table.add_column(col)
    for r in range(args.runs):
        out = one_round(base, work, args.saves, texts)
        table.add_row(
            str(r + 1),
            f"{out['tail']:,}",
            f"{out['without']['open_cpu']:.2f} / {out['without']['open_wall']:.2f}",
            f"{out['refresh_cpu']:.2f} / {out['refresh_wall']:.2f} {len(out['written'])}",
            f"{out['with']['open_cpu']:.2f} / {out['with']['open_wall']:.2f}",
            ms(out["during"]),
            ms(out["alone"]),
        )
    console.print(table)


if __name__ == "__main__":
    main()
