"""The embedding cache's hot read: ``held_rows`` and ``held`` of every text, all held already.

    python bench/embedding_cache_bench.py [--n 10000] [--added 100] [--dims 384] [--repeats 41]

A cache file of ``n`` vectors and a side file of ``added`` more (as a server's cache is between
two rewrites) is written, then read by a fresh cache; each row is one call over every text
(``n + added``), its thread CPU (``time.thread_time``: what other jobs on the shared cores
disturb least) as the median, and the lowest and highest quartile, of ``repeats`` calls. The
model is a stand-in (a seeded random unit vector per text): the read path never calls it.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine_line

from cortexgraph.storage.embedding_cache import EmbeddingCache


class _SeededVectors:
    """A unit vector per text, the same each time (seeded by the text's hash)."""

    name = "bench-seeded"

    def __init__(self, dims: int) -> None:
        self.dims = dims

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
            vec = np.random.default_rng(seed).standard_normal(self.dims)
            out[row] = vec / np.linalg.norm(vec)
        return out


def _cpu_ms(call: Callable[[], object], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.thread_time()
        call()
        out.append((time.thread_time() - start) * 1e3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--added", type=int, default=100)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=41)
    args = parser.parse_args()
    texts = [f"memory {i}: a note about the lake trip number {i}" for i in range(args.n)]
    extra = [f"memory {i}: added since the file was written" for i in range(args.added)]
    with tempfile.TemporaryDirectory() as folder:
        writer = EmbeddingCache(_SeededVectors(args.dims), folder)
        writer.embed(texts)
        writer.save()
        writer.embed(extra)
        writer.save()
        cache = EmbeddingCache(_SeededVectors(args.dims), folder)
        asked = [*texts, *extra]
        cache.held_rows(asked)  # the file read, the keys hashed: not the hot path
        rows = [
            ("held_rows (gather)", lambda: cache.held_rows(asked)),
            ("held_rows, read whole", lambda: cache.held_rows(asked)[:]),
            ("held (arrays)", lambda: cache.held(asked)),
        ]
        table = Table(title=f"{len(asked):,} texts, all held ({args.dims} dims): thread CPU ms")
        for column in ("call", "median", "q1", "q3"):
            table.add_column(column, justify="left" if column == "call" else "right")
        for name, call in rows:
            got = _cpu_ms(call, args.repeats)
            q1, _, q3 = statistics.quantiles(got, n=4)
            table.add_row(name, f"{statistics.median(got):.2f}", f"{q1:.2f}", f"{q3:.2f}")
    console = Console()
    console.print(table)
    console.print(machine_line())


if __name__ == "__main__":
    main()
