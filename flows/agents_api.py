"""cortexgraph 1.x's Python API for the agents: ``from cortexgraph.agents import Scheduler ...``.

    scheduler = Scheduler(dry_run=True)
    results = scheduler.run_pipeline()  # {"decay": [...], "cluster": [...], ...}
    scheduler.run_agent("decay")
    scheduler.run_scheduled(interval_hours=1)  # runs only when the last run is older
    DecayAnalyzer(dry_run=True).run()  # list of findings (memory_id, score, urgency, action)

Thin: each call reads Settings (the environment, as 1.x did), opens the configured store, vault
and beads tracker (flows.pipeline_setup.build_pipeline, the flow's own wiring) and runs the same
agents with the same configuration as ``cortexgraph-consolidate`` (agents.pipeline.run_agents),
without Prefect. A live run is recorded in ``consolidation-runs.jsonl`` like the CLI's, so
``run_scheduled`` and ``cortexgraph-consolidate --scheduled`` see each other's runs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cortexgraph.agents.pipeline import AGENT_ORDER, PipelineReport, run_agents, select_agents
from cortexgraph.agents.relationship_discovery import RelationshipConfig
from cortexgraph.flows.pipeline_setup import RunOptions, build_pipeline
from cortexgraph.settings import Settings, load_settings
from cortexgraph.user_store import last_run, record_run

# What each agent's ``run()`` returns in 1.x: the list inside its report.
_ITEMS = {
    "decay": "findings",
    "cluster": "clusters",
    "merge": "outcomes",
    "promote": "promotions",
    "relations": "discovered",
}


def results_of(report: PipelineReport) -> dict[str, list[Any]]:
    """1.x's ``{"decay": [...], "cluster": [...], ...}`` from a pipeline report."""
    return {
        name: list(getattr(report.reports[name], _ITEMS[name]))
        for name in report.agents
        if name in report.reports
    }


def _settings(settings: Settings | None, storage_path: str | Path | None) -> Settings:
    if settings is not None:
        return settings
    return load_settings(storage_path=storage_path)


class Scheduler:
    """Runs the agents in pipeline order over the configured store (1.x ``Scheduler``)."""

    def __init__(
        self,
        dry_run: bool = False,
        *,
        settings: Settings | None = None,
        storage_path: str | Path | None = None,
        use_embeddings: bool = True,
        merge_mode: str = "apply",
        gc: str = "off",
        now: float | None = None,
        interval_hours: float | None = None,
        **overrides: Any,
    ) -> None:
        self.dry_run = dry_run
        self.settings = _settings(settings, storage_path)
        self.use_embeddings = use_embeddings
        self.merge_mode = merge_mode
        self.gc = gc
        self.now = now
        self.interval_hours = interval_hours
        self.overrides = overrides  # pipeline_config options (link_threshold, relations ...)
        self.last_report: PipelineReport | None = None  # the full report of the last run

    def _run(self, agents: Sequence[str] | None) -> PipelineReport:
        options = RunOptions(
            dry_run=self.dry_run,
            merge_mode=self.merge_mode,
            gc=self.gc,
            use_embeddings=self.use_embeddings,
        )
        pipeline, collab = build_pipeline(self.settings, options, **self.overrides)
        now = time.time() if self.now is None else self.now
        report = run_agents(
            pipeline, now=now, dry_run=self.dry_run, agents=agents, notes=collab.notes
        )
        collab.finish()
        if not self.dry_run:
            record_run(self.settings.storage_path, report, time.time())
        self.last_report = report
        return report

    def run_pipeline(self) -> dict[str, list[Any]]:
        """All five agents; ``{"decay": [...], "cluster": [...], "merge": [...], ...}``."""
        return results_of(self._run(AGENT_ORDER))

    def run_agent(self, name: str) -> list[Any]:
        """One agent by name (decay, cluster, merge, promote, relations)."""
        (chosen,) = select_agents([name])
        return results_of(self._run([chosen]))[chosen]

    def run_scheduled(
        self, interval_hours: float | None = None, *, force: bool = False
    ) -> dict[str, Any]:
        """Run the pipeline only if the last live run is older than the interval (by default
        CORTEXGRAPH_CONSOLIDATION_INTERVAL seconds); ``force`` runs regardless."""
        hours = interval_hours or self.interval_hours or self.settings.consolidation_interval / 3600
        last = last_run(self.settings.storage_path)
        age = time.time() - last["finished_at"] if last else None
        if not force and age is not None and age < hours * 3600:
            return {
                "skipped": True,
                "reason": f"last run {age / 3600:.2f} h ago (< {hours:g} h)",
                "interval_hours": hours,
            }
        return {"skipped": False, "interval_hours": hours, "results": self.run_pipeline()}


class _Agent:
    """One agent as 1.x exposed it: ``Agent(dry_run=...).run()`` returns its list of results."""

    name = ""

    def __init__(
        self,
        dry_run: bool = False,
        *,
        settings: Settings | None = None,
        storage_path: str | Path | None = None,
        use_embeddings: bool = True,
        now: float | None = None,
        **options: Any,
    ) -> None:
        self.scheduler = Scheduler(
            dry_run,
            settings=settings,
            storage_path=storage_path,
            use_embeddings=use_embeddings,
            now=now,
            **self._overrides(**options),
        )

    @property
    def dry_run(self) -> bool:
        return self.scheduler.dry_run

    def _overrides(self, **options: Any) -> dict[str, Any]:
        if options:
            raise TypeError(f"{type(self).__name__} got unexpected options {sorted(options)}")
        return {}

    def run(self) -> list[Any]:
        return self.scheduler.run_agent(self.name)


class DecayAnalyzer(_Agent):
    """Memories fading towards the forget threshold: ``memory_id, score, urgency, action``."""

    name = "decay"


class ClusterDetector(_Agent):
    """Groups of similar memories: ``cluster_id, memory_ids, cohesion, action``."""

    name = "cluster"

    def _overrides(
        self,
        similarity_threshold: float | None = None,
        min_cluster_size: int | None = None,
        rate_limit: int | None = None,
        **rest: Any,
    ) -> dict[str, Any]:
        # rate_limit: 1.x throttled LLM calls; clustering here calls no remote service.
        super()._overrides(**rest)
        out: dict[str, Any] = {}
        if similarity_threshold is not None:  # the bar whatever the similarity, as in 1.x
            out["link_threshold"] = out["tfidf_link_threshold"] = similarity_threshold
        if min_cluster_size is not None:
            out["min_cluster_size"] = min_cluster_size
        return out


class SemanticMerge(_Agent):
    """Merges the clusters whose merge issues are open: ``new_memory_id, source_ids, success``."""

    name = "merge"


class LTMPromoter(_Agent):
    """Promotes memories that earned it to the vault: ``memory_id, vault_path, criteria_met``."""

    name = "promote"


class RelationshipDiscovery(_Agent):
    """Relates memories sharing entities: ``from_id, to_id, strength, confidence, reasoning``."""

    name = "relations"

    def _overrides(
        self,
        min_shared_entities: int | None = None,
        min_confidence: float | None = None,
        **rest: Any,
    ) -> dict[str, Any]:
        super()._overrides(**rest)
        base = RelationshipConfig()
        return {
            "relations": RelationshipConfig(
                min_shared_entities=base.min_shared_entities
                if min_shared_entities is None
                else min_shared_entities,
                min_confidence=base.min_confidence if min_confidence is None else min_confidence,
            )
        }


__all__ = [
    "ClusterDetector",
    "DecayAnalyzer",
    "LTMPromoter",
    "RelationshipDiscovery",
    "Scheduler",
    "SemanticMerge",
    "results_of",
]
