"""cortexgraph 1.2.1's five agents over a JSONL store; prints one JSON line. Reference venv only.

python _pipeline_reference_worker.py DATASET.json STORE_DIR VAULT_DIR

The dataset holds the memories with their MiniLM vectors (1.2.1 clusters by ``Memory.embed``
when every memory has one), so both implementations compare the same similarities. Agents run
live (dry_run=False) with their rate limiter opened wide; 1.2.1 files issues through the ``bd``
CLI, and an agent that fails is reported with its error instead of a time.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time


def main() -> None:
    dataset, store_dir, vault = sys.argv[1:4]
    os.makedirs(vault, exist_ok=True)  # a named vault must exist
    os.environ["CORTEXGRAPH_STORAGE_PATH"] = store_dir
    os.environ["LTM_VAULT_PATH"] = vault
    os.environ["CORTEXGRAPH_LTM_VAULT_PATH"] = vault
    os.environ["CORTEXGRAPH_ENABLE_EMBEDDINGS"] = "false"
    import logging

    logging.disable(logging.WARNING)
    from pathlib import Path

    from cortexgraph.storage.jsonl_storage import JSONLStorage
    from cortexgraph.storage.models import Memory, MemoryMetadata

    data = json.loads(Path(dataset).read_text())
    store = JSONLStorage(storage_path=Path(store_dir))
    store.connect()
    store.save_memories_batch(
        [
            Memory(
                id=r["id"],
                content=r["content"],
                meta=MemoryMetadata(tags=r["tags"]),
                entities=r["entities"],
                created_at=r["t"],
                last_used=r["t"],
                use_count=r["use_count"],
                embed=r["embed"],
            )
            for r in data["memories"]
        ]
    )
    import cortexgraph.context as context

    context.db = context._db = store  # what the agents get from get_db()
    from cortexgraph.agents.cluster_detector import ClusterDetector
    from cortexgraph.agents.decay_analyzer import DecayAnalyzer
    from cortexgraph.agents.ltm_promoter import LTMPromoter
    from cortexgraph.agents.relationship_discovery import RelationshipDiscovery
    from cortexgraph.agents.semantic_merge import SemanticMerge

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out: dict = {"seconds": {}, "items": {}, "errors": {}}
    t_all = time.perf_counter()
    for name, cls in (
        ("decay", DecayAnalyzer),
        ("cluster", ClusterDetector),
        ("merge", SemanticMerge),
        ("promote", LTMPromoter),
        ("relations", RelationshipDiscovery),
    ):
        t = time.perf_counter()
        try:
            results = cls(dry_run=False, rate_limit=10**9).run()
            out["items"][name] = len(results or [])
        except Exception as exc:  # report, do not hide
            out["errors"][name] = f"{type(exc).__name__}: {exc}"[:200]
        out["seconds"][name] = time.perf_counter() - t
    out["total_s"] = time.perf_counter() - t_all
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - rss0
    print(json.dumps(out))


if __name__ == "__main__":
    main()
