"""The flow under the Dask task runner (a local cluster of two processes) matches threads."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cortexgraph.flows.consolidation import RunOptions, run_pipeline
from cortexgraph.settings import load_settings

NOW = 1_760_000_000.0 + 3600


def _comparable(report):
    """What the agents decided, without timings or wiring notes."""
    cluster = report.reports["cluster"]
    return {
        "method": cluster.method,
        "clusters": [(c.memory_ids, round(c.cohesion, 4), c.action) for c in cluster.clusters],
        "merge": [(o.source_ids, o.status, o.content) for o in report.reports["merge"].outcomes],
        "decay": [(f.memory_id, f.action) for f in report.reports["decay"].findings],
        "relations": [
            (d.from_id, d.to_id, d.strength) for d in report.reports["relations"].discovered
        ],
        "promote": [p.memory_id for p in report.reports["promote"].promotions],
    }


@pytest.mark.slow
def test_dask_runner_gives_the_thread_runners_result(prefect_harness, tmp_path):
    from cortexgraph.demo_data import demo_memories
    from cortexgraph.storage import open_store

    store_dir, vault = tmp_path / "store", tmp_path / "vault"
    open_store(store_dir).put_many(demo_memories(now=NOW - 3600)[:80])
    settings = load_settings(storage_path=store_dir, ltm_vault_path=vault, beads_enabled=False)
    # Dry runs: nothing is written, so both start from the same store and a cold cache.
    options = RunOptions(dry_run=True, now=NOW, embed_batch_size=32)
    threads = run_pipeline(settings, options)
    dask = run_pipeline(settings, replace(options, task_runner="dask"))
    assert "embedded 80 new text(s) in 3 embed-batch task(s)" in dask.notes
    assert dask.reports["cluster"].method == "embeddings:all-MiniLM-L6-v2"
    assert _comparable(dask) == _comparable(threads)
    assert any(c for c in _comparable(dask)["clusters"])  # something to compare
