"""Consolidation pipeline: wall time, peak memory, merge quality, graph and issue noise.

    OMP_NUM_THREADS=1 python bench/pipeline_bench.py --sizes 1000 10000 100000 --cold-max 10000
    OMP_NUM_THREADS=1 python bench/pipeline_bench.py --build-cache 100000   # once, ~background
    OMP_NUM_THREADS=1 python bench/pipeline_bench.py --reference            # + cortexgraph 1.2.1

Each size runs all five agents live (merges, relations, notes, issues) on a fresh JSONL store
of synthetic memories (bench/_pipeline_data.py). Issues go to the real beads tracker in the
store's own git repository, as the CLI does (one commit per agent, see docs/beads.md);
``--memory-tracker`` adds a row per size with the in-memory tracker, a labelled ablation. Cold = empty embedding cache (the
model embeds every memory); warm = the persistent cache in ``--cache-dir`` (filled by a cold
run or ``--build-cache``). Ratios are against the smallest size in the same run, beside the
n log n ratio. Peak memory is the process's peak RSS growth during the run (numpy included).
A run is what the flow runs: the agents, the vault's refresh of promoted notes (short titles,
Related lists; column "vault refresh"), the sink's close; "excl. notes" leaves out promote and
refresh.
The demo set reports merge P/R on its two labelled halves (thresholds were tuned on half A),
and the relation graph and decay issue counts with the beads tracker, before and after.
"""

from __future__ import annotations

import argparse
import math
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine_line
from _pipeline_data import NOW, demo_labelled, merged_groups, pair_quality, synthetic

from cortexgraph.agents.cluster_detector import ClusterConfig
from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.agents.pipeline import Pipeline, PipelineConfig, run_agents
from cortexgraph.agents.relationship_discovery import RelationshipConfig
from cortexgraph.storage import embeddings as _embeddings
from cortexgraph.storage import open_store
from cortexgraph.storage.embeddings import EmbeddingCache

# What the agents did before this round of changes, for the "before" rows.
BEFORE = PipelineConfig(
    cluster=ClusterConfig(
        link_threshold=0.83,
        merge_cohesion=0.85,
        review_cohesion=0.65,
        guard_details=False,
        restatements_only=False,
    ),
    relations=RelationshipConfig(max_entity_share=1.0, max_relations_per_memory=10**9),
)
console = Console(width=220)
BACKEND = "default"  # --backend torch: MiniLM on torch fp32 instead of the default chain
REFRESH_SECONDS: dict[int, float] = {}  # id(report) -> the vault refresh after the agents


def default_embedder():
    """The product's default embedder, torch fp32 with ``--backend torch``, or the int8 graph
    with the FFN output projections quantised too with ``--backend onnx-int8-ffn`` (for
    comparing merge quality between backends; give each its own --cache-dir)."""
    if BACKEND == "torch":
        return _embeddings.SentenceTransformerEmbedder(_embeddings.model_path())
    if BACKEND == "onnx-int8-ffn":
        from cortexgraph.storage.onnx_embedder import OnnxEmbedder

        return OnnxEmbedder(
            _embeddings.model_path(), _embeddings.DEFAULT_MODEL, int8_ffn_output=True
        )
    return _embeddings.default_embedder()


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class PlainFileSink:
    """One markdown file per promoted memory and nothing else: the agents' own cost, without
    vault_sync's per-note work (lookup by id, edit guard, entity notes; measured with the real
    sink up to ``--vault-max``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def write_note(self, memory, *, related=(), relations=(), reason="", now):
        from cortexgraph.agents.protocols import NoteRef

        path = self.root / f"{memory.id}.md"
        created = not path.exists()
        path.write_text(f"# {memory.content[:60]}\n\n{memory.content}\n", encoding="utf-8")
        return NoteRef(memory.id, path.name, created)


def run_once(
    root: Path,
    memories,
    cache_dir: Path | None,
    config: PipelineConfig | None = None,
    tracker=None,
    real_vault: bool = True,
    model=None,
):
    """One live pipeline run on a fresh store, as the flow runs it (the agents, then the
    vault's refresh of promoted notes, then the sink's close); (wall s, peak RSS growth MiB,
    report). The refresh's seconds go to REFRESH_SECONDS. ``model``: the embedder, else
    ``default_embedder()``."""
    from cortexgraph.vault_sync import ObsidianNoteSink
    from cortexgraph.vault_sync.refresh import refresh_notes

    shutil.rmtree(root / "store", ignore_errors=True)
    shutil.rmtree(root / "vault", ignore_errors=True)
    open_store(root / "store").put_many(memories)
    if tracker is None:  # the CLI's default: beads in the storage directory's own repository
        from cortexgraph.storage.beads import open_tracker

        tracker = open_tracker(root / "store", search_parents=False)
    model = model or default_embedder()
    rss0 = _rss_mib()
    t0 = time.perf_counter()
    store = open_store(root / "store")
    cache = EmbeddingCache(model, cache_dir) if model is not None and cache_dir else None
    sink = (
        ObsidianNoteSink(root / "vault", batch=True)
        if real_vault
        else PlainFileSink(root / "vault")
    )  # as flows/wiring.py makes it
    pipeline = Pipeline(store, embedder=cache, sink=sink, tracker=tracker, config=config)
    report = run_agents(pipeline, now=NOW + 3600)
    t1 = time.perf_counter()
    if real_vault:  # what the flow does after the agents (flows/consolidation.py)
        refresh_notes(store, sink, now=NOW + 3600)
    REFRESH_SECONDS[id(report)] = time.perf_counter() - t1
    if cache is not None:
        cache.save()
    getattr(sink, "close", lambda: None)()  # what the flow's finish() does
    return time.perf_counter() - t0, _rss_mib() - rss0, report


def warm_cache(model, cache_dir: Path, memories):
    """Embed ``memories`` into the cache at ``cache_dir`` and save it, so a run starts warm;
    returns their vectors."""
    cache = EmbeddingCache(model, cache_dir)
    vectors = cache.embed([m.content for m in memories])
    cache.save()
    return vectors


def build_cache(n: int, cache_dir: Path) -> None:
    model = default_embedder()
    if model is None:
        raise SystemExit("no embedding model installed")
    cache = EmbeddingCache(model, cache_dir)
    texts = list(dict.fromkeys(m.content for m in synthetic(n)[0]))
    todo = cache.missing(texts)
    console.print(f"{len(texts):,} distinct texts, {len(todo):,} to embed into {cache_dir}")
    t0 = time.perf_counter()
    step = 2048
    for k in range(0, len(todo), step):
        cache.embed(todo[k : k + step])
        done = min(k + step, len(todo))
        rate = done / (time.perf_counter() - t0)
        console.print(
            f"  {done:,}/{len(todo):,}  {rate:.0f} texts/s  eta "
            f"{(len(todo) - done) / rate / 60:.1f} min",
            highlight=False,
        )
        if (k // step) % 8 == 7:
            cache.save()
    cache.save()
    console.print(f"cache built in {time.perf_counter() - t0:.0f} s")


def scale_table(
    sizes: list[int], cold_max: int, cache_dir: Path, vault_max: int, memory_tracker: bool = False
) -> None:
    table = Table(
        title=f"Consolidation pipeline, live run of all five agents (JSONL store); {machine_line()}"
    )
    for col in (
        "memories",
        "cache",
        "sink",
        "tracker",
        "wall s",
        "excl. notes s",
        "peak RSS MiB",
        "ratio",
        "n log n ratio",
        "decay",
        "cluster",
        "merge",
        "promote",
        "relations",
        "vault refresh",
        "merge P",
        "merge R",
        "pairs compared",
        "merged",
        "notes",
        "edges",
    ):
        table.add_column(col, justify="right")
    base: dict[str, tuple[int, float]] = {}
    for n in sizes:
        memories, group_of = synthetic(n)
        root = Path(tempfile.mkdtemp(prefix=f"cgbench{n}-"))
        runs = []
        if n <= cold_max:  # warm is then the cache the cold run left
            runs = [("cold", root / "cache"), ("warm", root / "cache")]
        else:
            runs = [("warm", cache_dir)]
        if memory_tracker:
            runs.append(("warm", runs[-1][1], "memory"))
        for label, cdir, *ablation in runs:
            cdir.mkdir(parents=True, exist_ok=True)
            if label == "warm" and EmbeddingCache(default_embedder(), cdir).missing(
                [m.content for m in memories]
            ):
                console.print(f"[yellow]{n:,}: warm cache incomplete; this run fills it[/]")
            real = n <= vault_max
            mem = InMemoryIssueTracker() if ablation else None
            wall, peak, report = run_once(root, memories, cdir, tracker=mem, real_vault=real)
            p, r = pair_quality(merged_groups(report), group_of)
            b = base.setdefault(label + ("/memory" if ablation else ""), (n, wall))
            nlogn = (n * math.log(n)) / (b[0] * math.log(b[0]))
            s = report.seconds
            cl, rel = report.reports["cluster"], report.reports["relations"]
            notes = len(report.reports["promote"].promotions)
            table.add_row(
                f"{n:,}",
                label,
                "vault" if real else "plain",
                "memory (ablation)" if ablation else "beads",
                f"{wall:.2f}",
                f"{wall - s['promote'] - REFRESH_SECONDS[id(report)]:.2f}",
                f"{peak:.0f}",
                f"{wall / b[1]:.2f}",
                f"{nlogn:.2f}",
                *(f"{s[a]:.2f}" for a in report.agents),
                f"{REFRESH_SECONDS[id(report)]:.2f}",
                f"{p:.3f}",
                f"{r:.3f}",
                f"{cl.compared_pairs:,}",
                str(report.reports["merge"].count("merged")),
                f"{notes:,}",
                f"{rel.graph.edges:,}",
            )
            console.print(f"{n:,} {label}: {wall:.2f} s", highlight=False)
        shutil.rmtree(root, ignore_errors=True)
    console.print(table)


def demo_tables(cache_dir: Path) -> None:
    from cortexgraph.user_store import open_issue_tracker

    ms, group_of, half_a, half_b = demo_labelled()
    warm_cache(default_embedder(), cache_dir, ms)  # both rows start from a warm cache
    table = Table(
        title=f"Demo set ({len(ms)} memories, {len(set(group_of.values()))} labelled "
        "near-duplicate groups), live run with the beads tracker"
    )
    for col in (
        "agents",
        "merge P (A, tuned)",
        "merge R (A)",
        "merge P (B, held out)",
        "merge R (B)",
        "merge P all",
        "merge R all",
        "edges",
        "largest comp.",
        "top hub",
        "decay issues",
        "re-run: opened",
        "duplicates",
        "decay s",
        "total s",
    ):
        table.add_column(col, justify="right")
    for label, config in (("before", BEFORE), ("after", None)):
        root = Path(tempfile.mkdtemp(prefix="cgbench-demo-"))
        from cortexgraph.settings import load_settings

        settings = load_settings(storage_path=root / "store", ltm_vault_path=root / "vault")
        (root / "issues").mkdir(parents=True)
        (root / "vault").mkdir()  # a named vault must exist
        tracker, where = open_issue_tracker(settings, root / "issues")  # run_once resets store/
        assert "beads" in where or ".beads" in where, where
        wall, _, report = run_once(root, ms, cache_dir, config, tracker)
        groups = merged_groups(report)
        pa, ra = pair_quality(groups, group_of, half_a)
        pb, rb = pair_quality(groups, group_of, half_b)
        p, r = pair_quality(groups, group_of)
        g = report.reports["relations"].graph
        store = open_store(root / "store")
        hub = store.get(g.most_connected[0][0]) if g.most_connected else None
        hub_text = f"{g.most_connected[0][1]}: {', '.join(hub.entities)}" if hub else "-"
        decay = report.reports["decay"]
        pipeline = Pipeline(store, tracker=tracker, config=config)
        again = run_agents(pipeline, now=NOW + 3600, agents=["decay"]).reports["decay"]
        per_memory = Counter(
            str(i.metadata.get("memory_id")) for i in tracker.query(labels=("consolidation:decay",))
        )
        table.add_row(
            label,
            f"{pa:.3f}",
            f"{ra:.3f}",
            f"{pb:.3f}",
            f"{rb:.3f}",
            f"{p:.3f}",
            f"{r:.3f}",
            f"{g.edges:,}",
            str(g.largest_component),
            hub_text,
            str(decay.issues_opened),
            str(again.issues_opened),
            str(sum(c - 1 for c in per_memory.values())),
            f"{report.seconds['decay']:.2f}",
            f"{wall:.2f}",
        )
        shutil.rmtree(root, ignore_errors=True)
    console.print(table)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000])
    ap.add_argument("--cold-max", type=int, default=10000, help="skip cold runs above this n")
    ap.add_argument(
        "--vault-max",
        type=int,
        default=10000,
        help="above this n, notes go to plain files (see PlainFileSink)",
    )
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/cgbench-cache"))
    ap.add_argument("--build-cache", type=int, metavar="N", help="only embed synthetic(N)")
    ap.add_argument("--reference", action="store_true", help="also run cortexgraph 1.2.1 on 1k")
    ap.add_argument("--no-demo", action="store_true")
    ap.add_argument(
        "--memory-tracker",
        action="store_true",
        help="also a warm row per size with the in-memory tracker (ablation)",
    )
    ap.add_argument(
        "--backend",
        choices=["default", "torch", "onnx-int8-ffn"],
        default="default",
        help="torch: MiniLM on torch fp32; onnx-int8-ffn: the int8 graph with the FFN output "
        "projections int8 too (an ablation); compare with the default",
    )
    args = ap.parse_args()
    global BACKEND
    BACKEND = args.backend
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    if args.build_cache:
        build_cache(args.build_cache, args.cache_dir)
        return
    if not args.no_demo:
        demo_tables(args.cache_dir)
    if args.sizes:
        scale_table(args.sizes, args.cold_max, args.cache_dir, args.vault_max, args.memory_tracker)
    if args.reference:
        from _pipeline_reference import reference_table

        reference_table(console, args.cache_dir)


if __name__ == "__main__":
    main()
