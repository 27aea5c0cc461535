"""Pipeline wall time and peak memory at several store sizes; merge precision/recall.

    OMP_NUM_THREADS=1 python bench/pipeline_bench.py --sizes 1000 10000 [100000]

Synthetic memories come in near-duplicate groups (paraphrases of one fact) among unrelated
facts; the groups are the ground truth for merge quality, measured also on the shipped demo set.
Cold = empty embedding cache; warm = the cache a previous run left. Ratios are against the
smallest size measured in the same run; n log n growth is printed beside them.
"""

from __future__ import annotations

import argparse
import math
import random
import shutil
import tempfile
import time
import tracemalloc
from itertools import combinations
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agents.memory_tracker import InMemoryIssueTracker
from agents.pipeline import Pipeline, PipelineConfig, run_agents
from storage import open_store
from storage.embeddings import EmbeddingCache, default_embedder
from storage.models import Memory, MemoryMeta, new_id

NOW = 1_760_000_000
PEOPLE = ["Sam", "Aisha", "Diego", "Mei", "Tom", "Kofi", "Elena", "Priya", "Lars", "Noor"]
TECH = ["PostgreSQL", "Redis", "Kafka", "Terraform", "Grafana", "Airflow", "Rust", "Go",
        "FastAPI", "React", "Kubernetes", "Celery", "DuckDB", "Sentry", "Vault"]  # fmt: skip
THINGS = ["billing", "search", "auth", "ledger", "mobile app", "data pipeline", "docs site",
          "payments API", "analytics", "CI"]  # fmt: skip
REASONS = ["it is cheaper to run", "the team already knows it", "latency was too high",
           "it scales better", "the old one is end of life", "compliance asks for it"]  # fmt: skip
TEMPLATES = [
    "{p} decided to use {t} for the {x} because {r}.",
    "{p} reported that {t} in {x} failed twice this week; {r}.",
    "The {x} team wants {p} to own the {t} migration next sprint.",
    "{p} prefers {t} over the alternatives for {x} work since {r}.",
]
PARAPHRASE = [
    lambda s: s,
    lambda s: s.replace("decided to use", "chose").replace("wants", "would like"),
    lambda s: s.rstrip(".") + ", as noted in the review.",
    lambda s: s.lower(),
]


def synthetic(n: int, seed: int = 7) -> tuple[list[Memory], dict[str, int]]:
    """Facts in near-duplicate groups (paraphrases), among unrelated facts and hard negatives.

    Entities are the person, technology and project the text names; half the facts carry a ticket
    number. One fact in six gets a *hard negative*: the same sentence with the person, the
    technology or the ticket swapped, a different fact that must not be merged with it.
    Distinct facts differ in at least one entity while the 1,500 combinations last (so up to
    about 2k memories; larger sets repeat combinations, and two facts with the same person,
    technology and project but a different claim are beyond what the lexical guards can tell).
    """
    rng = random.Random(seed)
    out: list[Memory] = []
    group_of: dict[str, int] = {}
    g = 0

    def emit(text: str, p: str, t: str, x: str, group: int | None) -> None:
        age = rng.uniform(0, 30)
        m = Memory(id=new_id(), content=text, meta=MemoryMeta(tags=(x.replace(" ", "-"),)),
                   entities=(p, t, x), created_at=int(NOW - age * 86400),
                   last_used=int(NOW - age * 86400), use_count=rng.randint(0, 3))  # fmt: skip
        out.append(m)
        if group is not None:
            group_of[m.id] = group

    used: set[tuple[str, str, str]] = set()
    while len(out) < n:
        p, t, x, r = rng.choice(PEOPLE), rng.choice(TECH), rng.choice(THINGS), rng.choice(REASONS)
        if (p, t, x) in used and len(used) < len(PEOPLE) * len(TECH) * len(THINGS):
            continue  # distinct facts differ in who, what or where (see the docstring)
        used.add((p, t, x))
        template = rng.choice(TEMPLATES)
        ticket = f" Ticket {rng.randint(1000, 99999)}." if rng.random() < 0.5 else ""
        fact = template.format(p=p, t=t, x=x, r=r) + ticket
        size = rng.choice([1, 1, 1, 2, 3]) if len(out) + 4 < n else 1
        for k in range(size):
            emit(PARAPHRASE[k](fact), p, t, x, g if size > 1 else None)
        g += 1
        if rng.random() < 1 / 6 and len(out) < n:
            p2 = rng.choice([q for q in PEOPLE if q != p])
            t2 = rng.choice([q for q in TECH if q != t])
            swap = rng.choice(["person", "tech", "ticket"] if ticket else ["person", "tech"])
            other = template.format(p=p2 if swap == "person" else p, t=t2 if swap == "tech" else t,
                                    x=x, r=r)  # fmt: skip
            other += f" Ticket {rng.randint(1000, 99999)}." if ticket else ""
            emit(other, p2 if swap == "person" else p, t2 if swap == "tech" else t, x, None)
            g += 1
    return out[:n], group_of


def pair_quality(report, group_of: dict[str, int]) -> tuple[float, float]:
    truth = {frozenset(p) for ids in _groups(group_of).values() for p in combinations(ids, 2)}
    merged = {frozenset(p) for o in report.reports["merge"].outcomes if o.status in
              ("merged", "previewed") for p in combinations(o.source_ids, 2)}  # fmt: skip
    tp = len(truth & merged)
    return (tp / len(merged) if merged else 1.0), (tp / len(truth) if truth else 1.0)


def _groups(group_of: dict[str, int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for mid, g in group_of.items():
        out.setdefault(g, []).append(mid)
    return out


def run_once(
    root: Path, memories: list[Memory] | None, cache_dir: Path
) -> tuple[float, float, object]:
    from vault_sync import ObsidianNoteSink

    store_dir = root / "store"
    if memories is not None:
        shutil.rmtree(store_dir, ignore_errors=True)
        shutil.rmtree(root / "vault", ignore_errors=True)
        open_store(store_dir).put_many(memories)
    tracemalloc.start()
    t0 = time.perf_counter()
    store = open_store(store_dir)
    model = default_embedder()
    cache = EmbeddingCache(model, cache_dir) if model else None
    pipeline = Pipeline(store, embedder=cache, sink=ObsidianNoteSink(root / "vault"),
                        tracker=InMemoryIssueTracker(), config=PipelineConfig())  # fmt: skip
    report = run_agents(pipeline, now=NOW, dry_run=True)  # preview: the store stays comparable
    if cache is not None:
        cache.save()
    wall = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return wall, peak, report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--no-cold", action="store_true", help="skip the cold (empty cache) runs")
    args = ap.parse_args()
    console = Console()
    table = Table(title="Consolidation pipeline (dry run of all five agents, JSONL store)")
    for col in ("memories", "cache", "wall s", "peak MiB (py)", "ratio", "n log n ratio",
                "merge P", "merge R", "pairs compared", "clusters"):  # fmt: skip
        table.add_column(col, justify="right")
    base: dict[str, tuple[int, float]] = {}
    for n in args.sizes:
        memories, group_of = synthetic(n)
        root = Path(tempfile.mkdtemp(prefix=f"cgbench{n}-"))
        cache_dir = root / "cache"
        cache_dir.mkdir()
        for label in (["cold"] if not args.no_cold else []) + ["warm"]:
            if label == "warm" and args.no_cold:
                run_once(root, memories, cache_dir)  # fill the cache first
            wall, peak, report = run_once(root, memories, cache_dir)
            p, r = pair_quality(report, group_of)
            b = base.setdefault(label, (n, wall))
            ratio = wall / b[1]
            nlogn = (n * math.log(n)) / (b[0] * math.log(b[0]))
            cl = report.reports["cluster"]
            table.add_row(f"{n:,}", label, f"{wall:.2f}", f"{peak:.0f}", f"{ratio:.2f}",
                          f"{nlogn:.2f}", f"{p:.3f}", f"{r:.3f}", f"{cl.compared_pairs:,}",
                          f"{len(cl.clusters):,}")  # fmt: skip
            console.print(f"{n:,} {label}: {wall:.2f} s; " + "; ".join(
                f"{k} {v:.2f}s" for k, v in report.seconds.items()))  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)
    console.print(table)
    demo_quality(console)


def demo_quality(console: Console) -> None:
    from cortexgraph.demo_data import demo_memories

    ms = demo_memories(now=NOW)
    group_of = {m.id: m.meta.extra["demo_group"] for m in ms if m.meta.extra.get("demo_group")}
    root = Path(tempfile.mkdtemp(prefix="cgbench-demo-"))
    (root / "cache").mkdir()
    _, _, report = run_once(root, ms, root / "cache")
    p, r = pair_quality(report, group_of)
    console.print(f"demo set ({len(ms)} memories, {len(set(group_of.values()))} labelled groups): "
                  f"merge precision {p:.3f}, recall {r:.3f}")  # fmt: skip
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
