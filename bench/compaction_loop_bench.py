"""Writers' speed while another process compacts the store in a loop (issue 15, low).

Before: every writer reloaded the whole store after each compaction. Now a writer that had read
exactly the bytes that were compacted follows the compaction note instead (storage.file_ops).

    .venv/bin/python bench/compaction_loop_bench.py [--memories 20000] [--seconds 8] [--pause 0.5]

Prints saves per second of one writer: alone, beside a compaction loop, and beside the loop
with following switched off (the old behaviour).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import tempfile
import time
from pathlib import Path

from cortexgraph.storage import JSONLStore, Memory
from cortexgraph.storage.models import new_id

NOW = 1_704_067_200


def _compactor(path: str, stop: mp.Event, counter: mp.Value, pause: float) -> None:  # type: ignore[valid-type]
    store = JSONLStore(path)
    while not stop.wait(pause):
        store.compact()
        with counter.get_lock():
            counter.value += 1


def _writer(path: str, seconds: float, follow: bool) -> tuple[int, float]:
    if not follow:
        JSONLStore._follow_compaction = lambda self, generation: False  # type: ignore[method-assign]
    store = JSONLStore(path)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        store.save(f"writer memory {n}", tags=["w"], now=NOW)
        n += 1
    return n, time.perf_counter() - start


def run(memories: int, seconds: float, pause: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "stm")
        JSONLStore(path).put_many(
            Memory(
                id=new_id(), content=f"seed memory {i} about kayaks", created_at=NOW, last_used=NOW
            )
            for i in range(memories)
        )
        n, took = _writer(path, seconds, follow=True)
        print(f"alone:                      {n / took:8.1f} saves/s")
        ctx = mp.get_context("spawn")
        for follow in (True, False):
            stop, counter = ctx.Event(), ctx.Value("i", 0)
            proc = ctx.Process(target=_compactor, args=(path, stop, counter, pause))
            proc.start()
            time.sleep(1.0)
            with ctx.Pool(1) as pool:
                n, took = pool.apply(_writer, (path, seconds, follow))
            stop.set()
            proc.join()
            label = "beside compactions, follow" if follow else "beside compactions, reload"
            print(f"{label}: {n / took:8.1f} saves/s  ({counter.value} compactions)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--pause", type=float, default=0.5, help="between compactions")
    args = parser.parse_args()
    run(args.memories, args.seconds, args.pause)
