"""The configuration an incremental run's state was taken under (agents.decision_key): another
threshold means the last run's judgements no longer stand, and the next run looks at every
memory; how a run acts on its findings (merge mode, gc) does not."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

from fakes import RecordingSink

from cortexgraph.agents import incremental
from cortexgraph.agents.decay_findings import GcMode
from cortexgraph.agents.decision_key import config_key, pipeline_key
from cortexgraph.agents.pipeline import Pipeline, PipelineConfig, pipeline_config, run_agents
from cortexgraph.agents.semantic_merge import MergeMode
from cortexgraph.storage import InMemoryStore

NOW = 1_750_000_000.0


def _state(store: InMemoryStore, pipe: Pipeline) -> dict:
    pipe.promote.sink = RecordingSink()
    changes = incremental.begin(pipe, None, NOW - 3600)
    report = run_agents(pipe, now=NOW - 3600, scope=pipe.scope)
    return incremental.state_after(pipe, changes, report, NOW - 3600)


def test_a_state_taken_under_other_thresholds_makes_a_full_run() -> None:
    store = InMemoryStore()
    for i in range(3):
        store.save(f"Sam moved ledger {i} to PostgreSQL.", now=NOW - 86400)
    decay = store.config.decay
    state = _state(store, Pipeline(store, config=pipeline_config(decay)))

    same = Pipeline(store, config=pipeline_config(decay))
    assert incremental.begin(same, state, NOW).full_because is None
    assert same.scope is not None

    other = Pipeline(store, config=pipeline_config(decay, link_threshold=0.5))
    changes = incremental.begin(other, state, NOW)
    assert other.scope is None
    assert changes.full_because is not None and "configuration changed" in changes.full_because

    # merge mode and gc say how a run acts, not what it finds
    acting = Pipeline(store, config=pipeline_config(decay, merge_mode="preview", gc="archive"))
    assert incremental.begin(acting, state, NOW).full_because is None
    assert acting.scope is not None


def test_a_state_without_a_recorded_configuration_makes_one_full_run() -> None:
    store = InMemoryStore()
    store.save("Sam moved the ledger to PostgreSQL.", now=NOW - 86400)
    pipe = Pipeline(store)
    state = _state(store, pipe)
    del state["config"]  # a state written before the key was recorded
    assert incremental.begin(Pipeline(store), state, NOW).full_because is not None


def test_the_key_of_a_pipeline_is_the_key_of_its_configuration() -> None:
    store = InMemoryStore()
    config = pipeline_config(store.config.decay, max_cluster_size=7)
    assert pipeline_key(Pipeline(store, config=config)) == config_key(config, store.config.decay)
    defaults = PipelineConfig()  # gaps filled by the Pipeline from the store's decay
    assert pipeline_key(Pipeline(store, config=defaults)) == config_key(
        defaults, store.config.decay
    )
    analyzer = replace(config.decay, gc=GcMode.DELETE) if config.decay else None
    merge = replace(config.merge, mode=MergeMode.LINK)
    assert config_key(replace(config, decay=analyzer, merge=merge), store.config.decay) == (
        config_key(config, store.config.decay)
    )


def test_the_key_is_the_same_in_every_process_whatever_its_hash_seed() -> None:
    code = (
        "from cortexgraph.agents.decision_key import pipeline_key;"
        "from cortexgraph.agents.pipeline import Pipeline;"
        "from cortexgraph.storage import InMemoryStore;"
        "print(pipeline_key(Pipeline(InMemoryStore())))"
    )
    keys = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2", "3")
    }
    assert len(keys) == 1 and keys.pop().isdigit()
