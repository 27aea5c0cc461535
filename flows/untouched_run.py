"""A consolidation run after no change, answered from the last run's state without opening the
store, the tracker or the vault (cortexgraph.run_state.unchanged_since)."""

from __future__ import annotations

import time

from cortexgraph.agents import incremental
from cortexgraph.agents.decision_key import config_key
from cortexgraph.agents.pipeline import PipelineReport
from cortexgraph.flows.pipeline_setup import RunOptions, pipeline_config
from cortexgraph.run_state import run_files, unchanged_since
from cortexgraph.settings import Settings
from cortexgraph.user_store import record_run


def untouched_run(settings: Settings, options: RunOptions, started: float) -> PipelineReport | None:
    """A run after no change, answered without opening the store, the tracker or the vault
    (cortexgraph.run_state.unchanged_since); None: run. Never for ``full``, nor gc's delete
    mode (the grace period of what gc archived is a clock of its own)."""
    if options.full or options.gc == "delete":
        return None
    now = time.time() if options.now is None else float(options.now)
    config = pipeline_config(settings, options.merge_mode, options.gc)
    key = config_key(config, settings.decay_config())
    gc = options.gc != "off"  # it acts on what the last run's gc may have left
    merges = options.merge_mode == "apply"  # it merges what a preview or links left
    paths = run_files(settings)
    wish = wants_embeddings(settings, options)  # the last run's similarity, or judge again
    since = unchanged_since(settings.storage_path, paths, now, key, gc, merges, wish)
    if since is None:
        return None
    report = incremental.untouched_report(
        options.agents,
        config,
        since=since,
        now=now,
        dry_run=options.dry_run,
        started=started,
        on_step=options.on_step,
    )
    if not options.dry_run:
        record_run(settings.storage_path, report, time.time())
    return report


def wants_embeddings(settings: Settings, options: RunOptions) -> bool:
    """Whether the run's cluster step is to judge by embeddings (flows.wiring)."""
    return options.use_embeddings and settings.enable_embeddings


__all__ = ["untouched_run", "wants_embeddings"]
