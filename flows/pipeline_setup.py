"""The agents' pipeline built from Settings: one place for the flow and the 1.x Python API.

``build_pipeline`` wires the collaborators (flows.wiring) and the configuration every edge
shares (agents.pipeline.pipeline_config with ``Settings.pipeline_options()``); ``RunOptions``
says what one run does. No Prefect here: the flow wraps the steps in tasks, the Python API
runs them directly (agents.pipeline.run_agents).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cortexgraph.agents.decay_findings import GcMode
from cortexgraph.agents.pipeline import (
    AGENT_ORDER,
    Pipeline,
    PipelineConfig,
    StepListener,
    parse_mode,
    select_agents,
)
from cortexgraph.agents.pipeline import pipeline_config as _pipeline_config
from cortexgraph.agents.semantic_merge import MergeMode
from cortexgraph.settings import Settings

if TYPE_CHECKING:  # what opens the store, tracker and vault loads when a run opens them
    from cortexgraph.flows.wiring import Collaborators


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What one consolidation run does, however it is started (``cortexgraph-consolidate``,
    the demo, ``run_pipeline`` from Python, a deployment's parameters): one value handed down
    instead of the same keywords at every layer."""

    dry_run: bool = False
    agents: tuple[str, ...] = AGENT_ORDER  # checked and put in pipeline order
    merge_mode: str = "apply"  # apply | preview | link
    gc: str = "off"  # off | archive | delete
    use_embeddings: bool = True  # False: TF-IDF similarity
    now: float | None = None  # the run's clock; None: the time it starts
    embed_batch_size: int = 1024  # texts per embed-batch task
    task_runner: str = "threads"  # how run_pipeline runs the flow here: threads | dask
    dask_address: str | None = None  # with dask: a running scheduler, tcp://host:8786
    full: bool = False  # True: every memory, not just what changed since the last run
    on_step: StepListener | None = field(default=None, compare=False)  # told after each agent

    def __post_init__(self) -> None:
        object.__setattr__(self, "agents", select_agents(self.agents))
        parse_mode(MergeMode, self.merge_mode, "merge mode")  # refused before the flow starts
        parse_mode(GcMode, self.gc, "gc")


def pipeline_config(
    settings: Settings, merge_mode: str = "apply", gc: str = "off", **overrides: object
) -> PipelineConfig:
    """Settings -> the agents' configuration; ``overrides`` replace single options (the 1.x
    agents' constructor arguments, e.g. ``link_threshold``)."""
    options = {**settings.pipeline_options(), **overrides}
    return _pipeline_config(settings.decay_config(), merge_mode=merge_mode, gc=gc, **options)


def build_pipeline(
    settings: Settings, options: RunOptions, **overrides: object
) -> tuple[Pipeline, Collaborators]:
    """The five agents over the configured store, embeddings, vault and tracker, configured
    for ``options`` (``overrides``: see pipeline_config). Their modules load here, not with
    this one: a run after no change opens none of them (0.15 CPU s of imports)."""
    from cortexgraph.activation.entity_batch import batch_entity_finder
    from cortexgraph.flows.wiring import open_collaborators
    from cortexgraph.storage.graveyard import Graveyard

    collab = open_collaborators(
        settings, dry_run=options.dry_run, use_embeddings=options.use_embeddings
    )
    pipeline = Pipeline(
        collab.store,
        embedder=collab.embedder,
        sink=collab.sink,
        tracker=collab.tracker,
        config=pipeline_config(settings, options.merge_mode, options.gc, **overrides),
        promote=collab.promote,
        graveyard=None if options.dry_run else Graveyard(settings.storage_path),
    )
    # Entities of the memories saved since the last run, in batches (never on a save).
    pipeline.relations.entity_finder = batch_entity_finder(settings.spacy_model)
    return pipeline, collab


__all__ = ["RunOptions", "build_pipeline", "pipeline_config"]
