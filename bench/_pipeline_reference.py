"""The 1k synthetic set through cortexgraph 1.2.1's agents and ours, side by side."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from rich.table import Table

HERE = Path(__file__).resolve().parent
AGENTS = ("decay", "cluster", "merge", "promote", "relations")


def reference_table(console, cache_dir: Path, n: int = 1000) -> None:
    from _pipeline_data import synthetic
    from _reference import reference_python, run_json
    from pipeline_bench import run_once, warm_cache

    from cortexgraph.storage.embeddings import default_embedder

    memories, _ = synthetic(n)
    vectors = warm_cache(default_embedder(), cache_dir, memories)
    root = Path(tempfile.mkdtemp(prefix="cgbench-ref-"))
    dataset = root / "dataset.json"
    dataset.write_text(
        json.dumps(
            {
                "memories": [
                    {
                        "id": m.id,
                        "content": m.content,
                        "tags": list(m.tags),
                        "entities": list(m.entities),
                        "t": m.created_at,
                        "use_count": m.use_count,
                        "embed": [float(x) for x in v],
                    }
                    for m, v in zip(memories, vectors, strict=True)
                ]
            }
        )
    )
    t0 = time.perf_counter()
    ref = run_json(
        reference_python(),
        HERE / "_pipeline_reference_worker.py",
        str(dataset),
        str(root / "ref-store"),
        str(root / "ref-vault"),
        isolated=True,
        timeout=3600,
    )
    ref_wall = time.perf_counter() - t0
    wall, peak, ours = run_once(root / "ours", memories, cache_dir)
    table = Table(
        title=f"{n:,} synthetic memories: cortexgraph 1.2.1 agents vs ours (live, "
        "warm vectors for both)"
    )
    for col in ("implementation", *AGENTS, "pipeline s", "peak RSS MiB", "notes"):
        table.add_column(col, justify="right")
    table.add_row(
        "1.2.1",
        *(f"{ref['seconds'][a]:.2f}" for a in AGENTS),
        f"{ref['total_s']:.2f}",
        f"{ref['peak_rss_mib']:.0f}",
        "; ".join(f"{k}: {v}" for k, v in ref["errors"].items())
        + f" (subprocess {ref_wall:.1f} s incl. store load)",
    )
    table.add_row(
        "ours", *(f"{ours.seconds[a]:.2f}" for a in AGENTS), f"{wall:.2f}", f"{peak:.0f}", ""
    )
    table.add_row(
        "ratio 1.2.1/ours",
        *(f"{ref['seconds'][a] / max(ours.seconds[a], 1e-6):.1f}" for a in AGENTS),
        f"{ref['total_s'] / wall:.1f}",
        "",
        "",
    )
    console.print(table)
    console.print(f"1.2.1 items per agent: {ref['items']}", highlight=False)
    shutil.rmtree(root, ignore_errors=True)
