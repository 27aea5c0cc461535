"""Token efficiency of memory_retrieve on LoCoMo dev: tokens sent vs evidence recall.

Each conversation goes into a fresh store through the public API (one memory per turn, the
speaker as its entity, the session date as its time; as bench/locomo.py does). For every
question, ``memory_retrieve`` runs at budgets 500/1000/2000; we report the tokens it returned
(MiniLM WordPiece), the share of the full conversation's tokens that is, and the evidence
recall inside the block (gold turns whose memory is in it). Baselines in the same run: the
whole conversation, and the top-10 of ``store.search`` pasted as plain text.

    OMP_NUM_THREADS=1 python bench/context_bench.py [--embeddings] [--ablation]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cortexgraph.retrieval import RetrievalConfig, RetrievalWeights, memory_retrieve  # noqa: E402
from cortexgraph.retrieval.tokens import default_counter  # noqa: E402
from cortexgraph.storage import InMemoryStore  # noqa: E402

# The LoCoMo loading helpers of the retrieval bench (same folder), not a second copy of them.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo import load_scorer, session_time  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "locomo_dev" / "locomo_dev.json"
BUDGETS = (500, 1000, 2000)
# Ablations at the same budgets: what the default weights and the per-item dates cost here.
VARIANTS = {
    "": RetrievalConfig(),
    ", relevance-only weights (1/0/0/0)": RetrievalConfig(weights=RetrievalWeights(1, 0, 0, 0)),
    ", no dates on items": RetrievalConfig(show_dates=False),
}
DAY = 86_400


def build(conv: dict[str, Any], dense: Any) -> tuple[InMemoryStore, dict[str, str], float]:
    store = InMemoryStore(dense=dense)
    dia_of: dict[str, str] = {}
    last = 0
    for m in conv["memories"]:
        when = session_time(m["date_time"])
        last = max(last, when)
        saved = store.save(m["text"], entities=[m["speaker"]], now=when, extra={"dia_id": m["id"]})
        dia_of[saved.id] = m["id"]
    return store, dia_of, last + DAY


def recall(found: set[str], gold: list[str]) -> tuple[float, float]:
    hits = sum(g in found for g in gold)
    return hits / len(gold), float(hits > 0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(DATA))
    ap.add_argument("--embeddings", action="store_true", help="hybrid search with MiniLM")
    ap.add_argument("--limit-conversations", type=int, default=0)
    ap.add_argument("--ablation", action="store_true", help="also other weights, no dates")
    args = ap.parse_args(argv)

    lr = load_scorer()
    convs, _ = lr.load_locomo(args.data, [1, 2, 3, 4])
    if args.limit_conversations:
        convs = convs[: args.limit_conversations]
    counter = default_counter()
    dense = None
    if args.embeddings:
        from cortexgraph.storage.embeddings import (
            EmbeddingCache,
            MatrixDenseIndex,
            default_embedder,
        )

        embedder = default_embedder()
        if embedder is not None:
            cache_dir = Path(tempfile.gettempdir()) / "cortexgraph-bench"
            cache_dir.mkdir(parents=True, exist_ok=True)
            dense = MatrixDenseIndex(EmbeddingCache(embedder, cache_dir))
    rows: dict[str, dict[str, list[float]]] = {}
    full_tokens: list[int] = []
    latencies: list[float] = []

    def add(name: str, tokens: int, full: int, r: tuple[float, float]) -> None:
        row = rows.setdefault(name, {"tokens": [], "share": [], "recall": [], "any": []})
        row["tokens"].append(tokens)
        row["share"].append(tokens / full)
        row["recall"].append(r[0])
        row["any"].append(r[1])

    n_questions = 0
    for conv in convs:
        store, dia_of, now = build(conv, dense)
        full = counter.count("\n".join(m["text"] for m in conv["memories"]))
        full_tokens.append(full)
        for q in conv["questions"]:
            n_questions += 1
            gold = q["gold"]
            add("whole conversation (baseline)", full, full, (1.0, 1.0))
            top = store.search(q["question"], top_k=10, now=now)
            text = "\n".join(r.memory.content for r in top)
            add(
                "store.search top-10 as text (baseline)",
                counter.count(text),
                full,
                recall({dia_of[r.memory.id] for r in top}, gold),
            )
            for label, config in VARIANTS.items():
                if label and not args.ablation:
                    continue
                for budget in BUDGETS:
                    t0 = time.perf_counter()
                    ctx = memory_retrieve(store, q["question"], budget, config=config, now=now)
                    if not label:
                        latencies.append(time.perf_counter() - t0)
                    assert ctx.tokens_used == counter.count(ctx.text) <= budget
                    found = {dia_of[i] for i in ctx.memory_ids if i in dia_of}
                    add(
                        f"memory_retrieve budget {budget}{label}",
                        ctx.tokens_used,
                        full,
                        recall(found, gold),
                    )
        if dense is not None:
            dense.cache.save()
    print_table(
        rows,
        n_questions,
        len(convs),
        full_tokens,
        latencies,
        counter.name,
        "hybrid BM25+MiniLM" if dense is not None else "BM25 only",
    )
    return 0


def print_table(
    rows: dict[str, dict[str, list[float]]],
    n: int,
    convs: int,
    full_tokens: list[int],
    latencies: list[float],
    tokenizer: str,
    search: str,
) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"LoCoMo dev: {convs} conversations, {n} questions (cat. 1-4); tokens by "
        f"{tokenizer}; search {search}"
    )
    for col in (
        "context",
        "mean tokens",
        "share of conversation",
        "tokens vs whole",
        "evidence recall",
        "any evidence",
        "recall per 1k tokens",
    ):
        table.add_column(col, justify="left" if col == "context" else "right")
    base = statistics.mean(rows["whole conversation (baseline)"]["tokens"])
    for name, row in rows.items():
        tokens = statistics.mean(row["tokens"])
        rec = statistics.mean(row["recall"])
        table.add_row(
            name,
            f"{tokens:,.0f}",
            f"{statistics.mean(row['share']):.1%}",
            f"{tokens / base:.3f}x",
            f"{rec:.3f}",
            f"{statistics.mean(row['any']):.3f}",
            f"{1000 * rec / tokens:.3f}",
        )
    console = Console(width=160)
    console.print(table)
    console.print(
        f"full conversations: {min(full_tokens):,}-{max(full_tokens):,} tokens; "
        f"memory_retrieve p50 {1000 * statistics.median(latencies):.1f} ms, "
        f"p95 {1000 * statistics.quantiles(latencies, n=20)[-1]:.1f} ms"
    )


if __name__ == "__main__":
    sys.exit(main())
