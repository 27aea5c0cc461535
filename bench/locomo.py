"""LoCoMo retrieval: first through the MCP server as an assistant uses it, then the ablations.

The headline table is the user's path (bench/_locomo_mcp.py): ``cortexgraph-mcp`` over stdio,
each turn saved with its text alone, each question asked with ``search_memory``, default
settings; its ablation rows each switch one default through the environment. The tables after
it are a labelled ablation: the Python API fed with metadata no assistant sends.

On that path each conversation is loaded into a fresh store through the public API (``store.save``: one
memory per turn, the speaker as its entity, the session date as its time and in its text, the
neighbouring turns as its context). Each question is answered with ``store.search``. Scoring is
the shared ``locomo_retrieval.py`` (imported by path), so the numbers compare with its baselines.

    OMP_NUM_THREADS=1 python bench/locomo.py            # default data: ../shared/data/locomo_dev
    python bench/locomo.py --no-baselines --no-ablation  # only the product's default path

The data is read from shared/ and never copied into the repository.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cortexgraph.storage import InMemoryStore, MemoryStatus, StoreConfig  # noqa: E402
from cortexgraph.storage.embeddings import EmbeddingCache, MatrixDenseIndex, default_embedder  # noqa: E402
from cortexgraph.storage.search import SearchRequest, SearchTuning, run_search  # noqa: E402
from cortexgraph.storage.text_index import TextIndex  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "locomo_dev" / "locomo_dev.json"
SCORER = ROOT.parent / "shared" / "bench" / "locomo_retrieval.py"
METRICS = ["R@5", "R@10", "Any@5", "MRR"]
DAY = 86_400


def load_scorer(path: Path = SCORER) -> ModuleType:
    spec = importlib.util.spec_from_file_location("locomo_retrieval", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import the shared scorer {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def session_time(date_time: str) -> int:
    """'1:56 pm on 8 May, 2023' -> unix seconds (0 when the format is unknown)."""
    try:
        return int(datetime.strptime(date_time.strip(), "%I:%M %p on %d %B, %Y").timestamp())
    except ValueError:
        return 0


def turn_line(m: dict[str, Any]) -> str:
    caption = f" [shares a photo: {m['caption']}]" if m.get("caption") else ""
    return f"{m['speaker']}: {m['raw_text']}{caption}"


def neighbour_context(memories: list[dict[str, Any]], i: int) -> str | None:
    """The turns before and after turn i in the same session (what a turn answers / prompts)."""
    around = [
        turn_line(memories[j])
        for j in (i - 1, i + 1)
        if 0 <= j < len(memories) and memories[j]["session"] == memories[i]["session"]
    ]
    return " ".join(around) or None


@dataclass(frozen=True, slots=True)
class Variant:
    """One configuration of cortexgraph's search, for the ablation table."""

    name: str
    stem: bool = True
    context: bool = True  # neighbouring turns stored in meta.context
    dense_context: bool = True  # ... and embedded with the content
    entities: bool = True  # speaker stored as the memory's entity
    embeddings: bool = True
    semantic_weight: float = 0.5
    entity_boost: float = 0.5
    decay: bool = True  # memories dated by their session; False: all saved "now"


DEFAULT = Variant("cortexgraph default (store.search)")
ABLATION = [
    Variant(
        "BM25 only, no stemming, bare turns",
        stem=False,
        context=False,
        entities=False,
        embeddings=False,
        entity_boost=0.0,
    ),
    Variant("+ stemming", context=False, entities=False, embeddings=False, entity_boost=0.0),
    Variant(
        "+ neighbouring turns as context (BM25 x0.3)",
        entities=False,
        embeddings=False,
        entity_boost=0.0,
    ),
    Variant("+ speaker entity boost (BM25 only path)", embeddings=False),
    Variant("+ MiniLM fusion w=0.5, content only", dense_context=False),
    Variant("+ MiniLM on content+context (default)"),
    Variant("  default, fusion w=0.3", semantic_weight=0.3),
    Variant("  default, fusion w=0.7", semantic_weight=0.7),
    Variant("  default, entity boost 0.2", entity_boost=0.2),
    Variant("  default, no decay (all memories same age)", decay=False),
    Variant("  default without stemming", stem=False),
]


class Loaded:
    """A conversation in a store, and how to ask it questions."""

    def __init__(self, conv: dict[str, Any], variant: Variant, cache: EmbeddingCache | None):
        config = StoreConfig(semantic_weight=variant.semantic_weight)
        dense = (
            MatrixDenseIndex(cache, include_context=variant.dense_context)
            if cache is not None
            else None
        )
        self.store = InMemoryStore(config, dense=dense if variant.embeddings else None)
        if not variant.stem:
            self.store._text = TextIndex(stem=False)  # ablation only: swap the tokeniser
        self.variant = variant
        self.tuning = SearchTuning(entity_boost=variant.entity_boost, use_context=variant.context)
        memories = conv["memories"]
        self.dia_of: dict[str, str] = {}
        t0 = time.perf_counter()
        last = 0
        for i, m in enumerate(memories):
            when = session_time(m["date_time"]) if variant.decay else 1_700_000_000
            last = max(last, when)
            saved = self.store.save(
                m["text"],
                entities=[m["speaker"]] if variant.entities else None,
                context=neighbour_context(memories, i) if variant.context else None,
                source=f"locomo:{conv['id']}",
                extra={"dia_id": m["id"], "session_date": m["date_time"]},
                now=when,
            )
            self.dia_of[saved.id] = m["id"]
        self.now = last + DAY  # questions are asked the day after the last session
        if variant.embeddings and dense is not None:
            self.search("warm up", 1)  # first search syncs the dense rows (embeds the turns)
        self.index_s = time.perf_counter() - t0

    def search(self, query: str, k: int) -> list[str]:
        if self.variant == DEFAULT:  # the product path, exactly as a caller would use it
            results = self.store.search(query, top_k=k, now=self.now)
        else:
            with self.store._lock:
                request = SearchRequest(
                    now=self.now,
                    query=query,
                    top_k=k,
                    status=MemoryStatus.ACTIVE,
                    use_embeddings=self.variant.embeddings,
                    tuning=self.tuning,
                )
                results = run_search(self.store, request)
        return [self.dia_of[r.memory.id] for r in results]


def evaluate(
    lr: ModuleType,
    convs: list[dict[str, Any]],
    build: Callable[[dict[str, Any]], Any],
    search: Callable[[Any, str, int], list[str]],
) -> dict[str, Any]:
    rows, latencies, index_s = [], [], 0.0
    for conv in convs:
        t0 = time.perf_counter()
        state = build(conv)
        index_s += time.perf_counter() - t0
        for q in conv["questions"]:
            t1 = time.perf_counter()
            ranked = search(state, q["question"], 50)
            latencies.append(time.perf_counter() - t1)
            rows.append({**q, "scores": lr.score_one(ranked[:50], q["gold"], [5, 10])})
    keys = ["R@5", "R@10", "Any@5", "Any@10", "MRR"]
    table = lr.aggregate(rows, keys)
    return {
        "table": table,
        "p50_ms": 1000 * statistics.median(latencies),
        "p95_ms": 1000 * statistics.quantiles(latencies, n=20)[-1],
        "index_s": index_s,
        "state": state,
    }


def run_variant(lr: ModuleType, convs: list, variant: Variant, cache: EmbeddingCache | None):
    return evaluate(lr, convs, lambda c: Loaded(c, variant, cache), lambda s, q, k: s.search(q, k))


def run_baseline(lr: ModuleType, convs: list, name: str) -> dict[str, Any]:
    build, _ = lr.make_bm25(True, "auto") if name == "bm25" else lr.make_dense(None)
    return evaluate(lr, convs, lambda c: build(c["memories"]), lambda s, q, k: s(q, k))


def print_tables(rows: list[tuple[str, dict[str, Any]]], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for col in [
        "retriever",
        *METRICS,
        "multi-hop R@5",
        "temporal R@5",
        "open-dom R@5",
        "single-hop R@5",
        "p50 ms",
        "p95 ms",
    ]:
        table.add_column(col, justify="left" if col == "retriever" else "right")
    base = rows[0][1]["table"]["overall"]["R@5"] if rows else 1.0
    for name, res in rows:
        t = res["table"]
        o = t["overall"]
        cats = [
            t.get(k, {}).get("R@5", float("nan"))
            for k in ("1 multi-hop", "2 temporal", "3 open-domain", "4 single-hop")
        ]
        table.add_row(
            f"{name}  ({o['R@5'] / base:.2f}x)",
            *(f"{o[m]:.3f}" for m in METRICS),
            *(f"{c:.3f}" for c in cats),
            f"{res['p50_ms']:.1f}",
            f"{res['p95_ms']:.1f}",
        )
    Console(width=200).print(table)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(DATA))
    ap.add_argument("--no-baselines", action="store_true", help="skip rank_bm25 and dense")
    ap.add_argument("--no-ablation", action="store_true", help="only the default configuration")
    ap.add_argument("--no-embeddings", action="store_true", help="as if the model were absent")
    ap.add_argument("--limit-conversations", type=int, default=0)
    ap.add_argument("--no-mcp", action="store_true", help="skip the MCP (user's path) table")
    ap.add_argument("--mcp-only", action="store_true", help="only the MCP (user's path) table")
    ap.add_argument(
        "--cache-dir",
        default=str(Path(tempfile.gettempdir()) / "cortexgraph-bench"),
        help="embedding cache (outside the repository)",
    )
    ap.add_argument(
        "--backend",
        choices=["default", "torch"],
        default="default",
        help="torch: MiniLM on torch fp32 instead of the default chain (int8 ONNX); "
        "give each backend its own --cache-dir",
    )
    args = ap.parse_args(argv)

    lr = load_scorer()
    convs, stats = lr.load_locomo(args.data, [1, 2, 3, 4])
    if args.limit_conversations:
        convs = convs[: args.limit_conversations]
    print(
        f"# {args.data}: {stats['conversations']} conversations, {stats['memories']} turns, "
        f"{sum(len(c['questions']) for c in convs)} questions"
    )

    if not args.no_mcp:
        from _locomo_mcp import MCP_ABLATIONS, print_mcp_table, run_mcp

        mcp_rows = [
            ("defaults: save_memory(text), search_memory(question)", run_mcp(lr, convs, {}))
        ]
        if not args.no_ablation:
            mcp_rows += [(label, run_mcp(lr, convs, env)) for label, env in MCP_ABLATIONS]
        print_mcp_table(
            mcp_rows,
            "The user's path: LoCoMo through cortexgraph-mcp over stdio "
            "(defaults first; each ablation row switches one default)",
        )
        if args.mcp_only:
            return 0

    cache = None
    embedder = None if args.no_embeddings else default_embedder()
    if embedder is not None and args.backend == "torch":
        from cortexgraph.storage.embeddings import SentenceTransformerEmbedder, model_path

        embedder = SentenceTransformerEmbedder(model_path())
    if embedder is not None:
        print(f"# embedder: {embedder.name} on {getattr(embedder, 'backend', '?')}")
        Path(args.cache_dir).mkdir(parents=True, exist_ok=True)
        cache = EmbeddingCache(embedder, args.cache_dir)
    else:
        print("# embedding model absent: cortexgraph runs BM25 only (labelled below)")

    rows: list[tuple[str, dict[str, Any]]] = []
    if not args.no_baselines:
        rows.append(("baseline: rank_bm25 (shared script)", run_baseline(lr, convs, "bm25")))
        if embedder is not None:
            rows.append(
                ("baseline: MiniLM dense (shared script)", run_baseline(lr, convs, "dense"))
            )
    default = DEFAULT if embedder is not None else replace(DEFAULT, embeddings=False)
    label = default.name + ("" if embedder is not None else " [BM25 only: no model]")
    res = run_variant(lr, convs, default, cache)
    rows.append((label, res))
    if cache is not None:
        cache.save()
    print_tables(
        rows,
        "Ablation path, not the user's: the Python API fed the speaker as entity, the "
        "session date as time and the neighbouring turns as context",
    )
    print(lr.format_table(res["table"], ["R@5", "R@10", "Any@5", "Any@10", "MRR"]))
    print_cost(res)

    if not args.no_ablation:
        ablation = [
            (v.name, run_variant(lr, convs, v if embedder else replace(v, embeddings=False), cache))
            for v in ABLATION
        ]
        if cache is not None:
            cache.save()
        print_tables(ablation, "Ablation: each idea added in turn (ratio: R@5 vs the first row)")
    return 0


def print_cost(res: dict[str, Any]) -> None:
    """Index size and latency of the default configuration (last conversation loaded)."""
    loaded: Loaded = res["state"]
    store = loaded.store
    size = store._text.size_estimate()
    dense = store.dense
    dense_bytes = dense.nbytes if isinstance(dense, MatrixDenseIndex) else 0
    print(
        f"cost: {len(store)} memories in the last store; BM25 {size['terms']} terms, "
        f"{size['postings']} postings + {size['context_postings']} context postings; "
        f"dense matrix {dense_bytes / 1e6:.2f} MB ({dense_bytes / max(1, len(store)):.0f} B/memory "
        f"incl. growth headroom); ingest+index {res['index_s']:.1f}s for all conversations "
        f"(embedding dominates; cached across runs); query p50 {res['p50_ms']:.1f} ms, "
        f"p95 {res['p95_ms']:.1f} ms (includes embedding the question)"
    )


if __name__ == "__main__":
    sys.exit(main())
