"""Search latency at 10k and 100k memories: BM25 only, and fused with a dense matrix.

Synthetic memories (Zipf-distributed vocabulary, ~15 words each); queries are 3-4 words taken
from a random memory. The dense half uses a fast deterministic fake embedder so that 100k
memories can be indexed in seconds: the matvec and candidate work are what is measured; the
real MiniLM's cost of embedding one query is measured separately and added in its own row.

    OMP_NUM_THREADS=1 python bench/search_bench.py [--sizes 10000,100000] [--queries 200]

Baselines in the same run: rank_bm25's full scan (what a non-inverted BM25 costs) and the
DenseScorer protocol path that hands every memory to the dense index per query.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cortexgraph.storage import InMemoryStore, Memory  # noqa: E402
from cortexgraph.storage.embeddings import EmbeddingCache, MatrixDenseIndex, default_embedder  # noqa: E402

NOW = 1_700_000_000


class HashEmbedder:
    """Deterministic 384-d vectors from hashed words: cheap enough for 100k memories."""

    name = "bench-hash-384"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
                out[row, h % 384] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


class ProtocolOnly:
    """Hides MatrixDenseIndex's fast path: what a plain storage.protocol.DenseScorer wrapper gets."""

    def __init__(self, index: MatrixDenseIndex) -> None:
        self._index = index

    def top(self, query: str, memories: Sequence[Memory], k: int) -> dict[str, float]:
        return self._index.top(query, memories, k)

    def similarities(self, query: str, memories: Sequence[Memory]) -> dict[str, float]:
        return self._index.similarities(query, memories)


def corpus(n: int, rng: random.Random) -> list[str]:
    vocab = [f"w{i}" for i in range(20_000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    return [" ".join(rng.choices(vocab, weights, k=rng.randint(8, 22))) for _ in range(n)]


def queries(texts: list[str], count: int, rng: random.Random) -> list[str]:
    out = []
    for _ in range(count):
        words = rng.choice(texts).split()
        out.append(" ".join(rng.sample(words, min(len(words), rng.randint(3, 4)))))
    return out


def timed(fn: Callable[[str], object], qs: list[str]) -> tuple[float, float]:
    fn(qs[0])  # warm: first dense search syncs the matrix
    times = []
    for q in qs:
        t0 = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times), 1000 * statistics.quantiles(times, n=20)[-1]


def bench_size(n: int, n_queries: int, rows: list[tuple]) -> None:
    rng = random.Random(n)
    texts = corpus(n, rng)
    qs = queries(texts, n_queries, rng)

    t0 = time.perf_counter()
    store = InMemoryStore()
    store.put_many(
        Memory(id=f"m{i}", content=t, created_at=NOW, last_used=NOW) for i, t in enumerate(texts)
    )
    build_bm25 = time.perf_counter() - t0
    p50, p95 = timed(lambda q: store.search(q, top_k=10, now=NOW), qs)
    rows.append((n, "cortexgraph BM25 (inverted index)", p50, p95, build_bm25))

    from rank_bm25 import BM25Okapi

    tokenised = [t.split() for t in texts]
    bm = BM25Okapi(tokenised)
    few = qs[: max(5, n_queries // 20)]
    p50_scan, p95_scan = timed(lambda q: bm.get_scores(q.split()), few)
    rows.append((n, "baseline: rank_bm25 full scan", p50_scan, p95_scan, None))

    dense = MatrixDenseIndex(EmbeddingCache(HashEmbedder()))
    t0 = time.perf_counter()
    store.dense = dense
    store.search("warm", top_k=10, now=NOW)
    build_dense = time.perf_counter() - t0
    p50, p95 = timed(lambda q: store.search(q, top_k=10, now=NOW), qs)
    rows.append((n, "cortexgraph BM25 + dense matrix (hash embedder)", p50, p95, build_dense))
    rows.append(
        (n, f"  dense matrix: {dense.nbytes / 1e6:.0f} MB for {len(dense)} rows", 0, 0, None)
    )

    store.dense = ProtocolOnly(dense)
    p50, p95 = timed(lambda q: store.search(q, top_k=10, now=NOW), few)
    rows.append((n, "baseline: DenseScorer protocol path (pool per query)", p50, p95, None))
    store.dense = None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--no-model", action="store_true", help="skip timing MiniLM query embedding")
    args = ap.parse_args(argv)

    rows: list[tuple] = []
    for n in (int(s) for s in args.sizes.split(",")):
        bench_size(n, args.queries, rows)

    embed_ms = None
    embedder = None if args.no_model else default_embedder()
    if embedder is not None:
        embedder.embed(["load the model"])
        rng = random.Random(1)
        times = []
        for i in range(50):
            t0 = time.perf_counter()
            embedder.embed([f"when did caroline go to the support group {rng.random()} {i}"])
            times.append(time.perf_counter() - t0)
        embed_ms = 1000 * statistics.median(times)

    from rich.console import Console
    from rich.table import Table

    table = Table(title="store.search latency (top_k=10, 1 thread)")
    for col in ("memories", "path", "p50 ms", "p95 ms", "index build s", "x vs BM25 scan"):
        table.add_column(col, justify="left" if col == "path" else "right")
    scan = {n: p for n, name, p, *_ in rows if name.startswith("baseline: rank_bm25")}
    for n, name, p50, p95, build in rows:
        ratio = f"{scan[n] / p50:.0f}x faster" if p50 and not name.startswith("baseline") else ""
        table.add_row(
            f"{n:,}",
            name,
            f"{p50:.2f}" if p50 else "",
            f"{p95:.2f}" if p95 else "",
            f"{build:.1f}" if build is not None else "",
            ratio,
        )
    if embed_ms is not None:
        table.add_row(
            "any", "+ MiniLM embedding of the query (real model)", f"{embed_ms:.2f}", "", "", ""
        )
    Console(width=160).print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
