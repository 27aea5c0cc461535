"""The five agents in order, as plain Python: the Prefect flow runs the same steps as tasks.

    decay -> cluster -> merge -> promote -> relations

A dry run changes nothing anywhere: every agent runs with ``dry_run=True`` on the live
collaborators (they only read), and the merge step previews the clusters found in the same run.

An incremental run sets ``Pipeline.scope`` (agents.run_scope.RunScope: what changed since the
last run, and who crossed a decay bar by time alone); what each agent then looks at is
agents.scoped_steps. ``scope=None`` is a full run.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from cortexgraph.agents.cluster_detector import ClusterConfig, ClusterDetector, ClusterReport
from cortexgraph.agents.common import ReportTable, to_jsonable
from cortexgraph.agents.decay_analyzer import DecayAnalyzer
from cortexgraph.agents.decay_findings import DecayAnalyzerConfig, GcMode
from cortexgraph.agents.ltm_promoter import LTMPromoter, PromoteFn, PromoterConfig
from cortexgraph.agents.protocols import Embedder, IssueTracker, NoteSink
from cortexgraph.agents.relationship_discovery import RelationshipConfig, RelationshipDiscovery
from cortexgraph.agents.run_scope import RunScope
from cortexgraph.agents.scoped_steps import run_scoped
from cortexgraph.agents.semantic_merge import MergeConfig, MergeMode, MergeReport, SemanticMerge
from cortexgraph.agents.undo import Graveyard
from cortexgraph.agents.vectors import similarity_method
from cortexgraph.storage.decay import DecayConfig
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.storage.protocol import MemoryStore

AGENT_ORDER = ("decay", "cluster", "merge", "promote", "relations")
# Who signs an agent's batch of issue changes (the beads commit's subject starts with it).
BATCH_AUTHOR = {
    "decay": "decay-analyzer",
    "cluster": "cluster-detector",
    "merge": "semantic-merge",
    "promote": "ltm-promoter",
    "relations": "relationship-discovery",
}


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    decay: DecayAnalyzerConfig | None = None
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    merge: MergeConfig = field(default_factory=MergeConfig)
    promote: PromoterConfig | None = None
    relations: RelationshipConfig = field(default_factory=RelationshipConfig)


@dataclass(frozen=True, slots=True)
class PipelineReport:
    dry_run: bool
    now: float
    agents: tuple[str, ...]
    reports: Mapping[str, Any]
    seconds: Mapping[str, float]
    total_seconds: float
    notes: tuple[str, ...] = ()  # how collaborators were wired (fallbacks said out loud)
    scope: RunScope | None = None  # an incremental run's scope; None: a full run

    def tables(self) -> list[ReportTable]:
        return [self.reports[name].table() for name in self.agents if name in self.reports]

    def to_markdown(self) -> str:
        head = (
            f"# Consolidation {'(dry run) ' if self.dry_run else ''}— {self.total_seconds:.2f} s\n"
        )
        timing = ", ".join(f"{n} {self.seconds[n]:.2f} s" for n in self.agents if n in self.seconds)
        said = (self.scope.describe(),) if self.scope is not None else ("full run",)
        notes = "".join(f"- {n}\n" for n in (*said, *self.notes))
        return head + f"\n{timing}\n\n{notes}\n" + "\n".join(t.to_markdown() for t in self.tables())

    def summary_json(self) -> dict[str, Any]:
        """``to_json`` without the reports themselves (the run record: a decay report of a
        big store lists thousands of findings)."""
        return {
            "dry_run": self.dry_run,
            "now": self.now,
            "agents": list(self.agents),
            "seconds": dict(self.seconds),
            "total_seconds": round(self.total_seconds, 4),
            "notes": list(self.notes),
            "incremental": None if self.scope is None else self.scope.to_json(),
            "summaries": {
                n: self.reports[n].table().summary for n in self.agents if n in self.reports
            },
        }

    def to_json(self) -> dict[str, Any]:
        return {
            **self.summary_json(),
            "reports": {n: to_jsonable(r) for n, r in self.reports.items()},
        }


def pipeline_config(
    decay: DecayConfig,
    *,
    link_threshold: float | None = None,
    tfidf_link_threshold: float | None = None,
    max_cluster_size: int = 12,
    min_cluster_size: int = 2,
    decay_memory_issues: bool = False,
    merge_mode: str = "apply",
    gc: str = "off",
    relations: RelationshipConfig | None = None,
    gc_grace_days: float = 7.0,
) -> PipelineConfig:
    """The one configuration every edge runs the agents with (the flow, the MCP tools, the
    Python API): ``cortexgraph.settings.Settings.pipeline_options()`` supplies the keywords."""
    cluster = ClusterConfig(
        max_cluster_size=max_cluster_size, min_cluster_size=min(min_cluster_size, max_cluster_size)
    )
    if link_threshold is not None:
        cluster = replace(cluster, link_threshold=link_threshold)
    if tfidf_link_threshold is not None:
        cluster = replace(cluster, tfidf_link_threshold=tfidf_link_threshold)
    return PipelineConfig(
        decay=DecayAnalyzerConfig(
            decay=decay,
            gc=parse_mode(GcMode, gc, "gc"),
            memory_issues=decay_memory_issues,
            gc_grace_days=gc_grace_days,
        ),
        cluster=cluster,
        merge=MergeConfig(mode=parse_mode(MergeMode, merge_mode, "merge mode")),
        relations=relations or RelationshipConfig(),
    )


def parse_mode(kind: type[GcMode] | type[MergeMode], value: str, what: str) -> Any:
    """``kind(value)``, or an InvalidInputError naming the choices (a CLI option or a tool
    argument spelt wrong is the user's to correct, not a traceback)."""
    try:
        return kind(value)
    except ValueError:
        choices = " | ".join(m.value for m in kind)
        raise InvalidInputError(f"unknown {what} {value!r}; choose {choices}") from None


def select_agents(names: Iterable[str] | None) -> tuple[str, ...]:
    if names is None:
        return AGENT_ORDER
    chosen = {n.strip().lower() for n in names if n and n.strip()}
    unknown = chosen - set(AGENT_ORDER)
    if unknown:
        raise InvalidInputError(
            f"unknown agent(s) {sorted(unknown)}; choose from {', '.join(AGENT_ORDER)}"
        )
    return tuple(n for n in AGENT_ORDER if n in chosen)


class Pipeline:
    """The five agents over one set of collaborators; ``step`` runs one of them."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        embedder: Embedder | None = None,
        sink: NoteSink | None = None,
        tracker: IssueTracker | None = None,
        config: PipelineConfig | None = None,
        promote: PromoteFn | None = None,
        graveyard: Graveyard | None = None,
    ) -> None:
        cfg = config or PipelineConfig()
        decay = store.config.decay
        self.tracker = tracker
        self.decay = DecayAnalyzer(
            store, tracker, cfg.decay or DecayAnalyzerConfig(decay=decay), graveyard
        )
        self.cluster = ClusterDetector(store, embedder, tracker, cfg.cluster)
        self.merge = SemanticMerge(store, tracker, cfg.merge)
        self.promote = LTMPromoter(
            store, sink, cfg.promote or PromoterConfig(decay=decay), promote, tracker
        )
        self.relations = RelationshipDiscovery(store, cfg.relations, tracker)
        self.scope: RunScope | None = None  # set by an incremental run (agents.changes)

    @property
    def similarity(self) -> str:
        """The similarity the cluster step judges by when its embedder answers (a cluster
        report's ``method``)."""
        return similarity_method(self.cluster.embedder)

    @property
    def judges_anew(self) -> bool:
        """An incremental run whose last run judged by other vectors (TF-IDF, another model):
        its cluster step compares every memory."""
        last = None if self.scope is None else self.scope.similarity
        return last is not None and last != self.similarity

    def step(self, name: str, *, now: float, dry_run: bool, previous: Mapping[str, Any]) -> Any:
        """Run one agent; its issue changes are one batch (one git commit with beads)."""
        with self._issue_batch(name), gc_frozen():
            return self._run(name, now=now, dry_run=dry_run, previous=previous)

    @contextmanager
    def _issue_batch(self, name: str) -> Iterator[None]:
        # A tracker that can group changes (storage.beads.BeadsTracker.batch) commits the
        # agent's changes once; others (the in-memory tracker, test fakes) change one by one.
        batch = getattr(self.tracker, "batch", None)
        with batch(BATCH_AUTHOR.get(name, name)) if callable(batch) else nullcontext():
            yield

    def _merged_before(self, merged: MergeReport) -> set[str]:
        """The active memories that the sources of the clusters ``merged`` skipped were merged
        into: a retried step's first attempt merged them (the flow's task retries), and a
        full run's later steps look at them as at every memory."""
        skipped = [i for o in merged.outcomes if o.status == "skipped" for i in o.source_ids]
        if not skipped:
            return set()
        store = self.decay.store
        into = {m.meta.extra.get("merged_into") for m in store.find_many(skipped)}
        return {
            m.id
            for m in store.find_many(sorted(i for i in into if isinstance(i, str)))
            if m.status is MemoryStatus.ACTIVE
        }

    def _run(self, name: str, *, now: float, dry_run: bool, previous: Mapping[str, Any]) -> Any:
        if name == "merge":
            found = previous.get("cluster")
            if not isinstance(found, ClusterReport):
                merged = self.merge.run(now=now, dry_run=dry_run)
            else:
                merged = self.merge.run(
                    now=now, dry_run=dry_run, clusters=found.clusters, related=found.related
                )
            if self.scope is not None:  # what the merge made is new to promote and relations
                made = {o.merged_id for o in merged.outcomes if o.merged_id}
                made |= self._merged_before(merged)
                self.scope = replace(self.scope, changed=self.scope.changed | made)
            return merged
        agent = getattr(self, name, None)
        if name not in AGENT_ORDER or agent is None:
            raise InvalidInputError(f"unknown agent {name!r}")
        if self.scope is None:
            return agent.run(now=now, dry_run=dry_run)
        return run_scoped(self, name, agent, now=now, dry_run=dry_run)


@contextmanager
def gc_frozen() -> Iterator[None]:
    """Leave what exists now out of the cyclic collector's full passes while an agent runs.

    An agent allocates enough to set off several full collections, and each one walked the
    whole open store (~0.12 s apiece at 10k memories, ~0.45 s of a 10k run): frozen objects
    are skipped. ``unfreeze`` hands them back afterwards, so a process that runs the pipeline
    again and again (a Prefect worker, the MCP server's consolidation tools) still collects
    them."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


StepListener = Callable[[str, Any, float], None]
# Runs one agent as ``runner(pipeline, now, dry_run, *extra)``: a Prefect task in the flow.
StepRunner = Callable[..., Any]


class PipelineRun:
    """One run's bookkeeping, the same with or without Prefect: which agents run (in pipeline
    order), their reports and seconds, and ``on_step``, told after each agent (the CLI's
    progress display)."""

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        now: float,
        dry_run: bool = False,
        agents: Iterable[str] | None = None,
        on_step: StepListener | None = None,
        started: float | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.now = now
        self.dry_run = dry_run
        self.agents = select_agents(agents)
        self.on_step = on_step
        self.reports: dict[str, Any] = {}
        self.seconds: dict[str, float] = {}
        self.started = time.perf_counter() if started is None else started  # perf_counter

    def wants(self, *names: str) -> bool:
        return any(name in self.agents for name in names)

    def step(self, name: str, runner: StepRunner | None = None, *extra: Any) -> Any:
        """Run agent ``name`` if it was chosen (else None) and return its report: through
        ``runner(pipeline, now, dry_run, *extra)``, by default ``Pipeline.step`` with the
        reports of the agents before it."""
        if name not in self.agents:
            return None
        t0 = time.perf_counter()
        if runner is None:
            report = self.pipeline.step(
                name, now=self.now, dry_run=self.dry_run, previous=self.reports
            )
        else:
            report = runner(self.pipeline, self.now, self.dry_run, *extra)
        self.reports[name] = report
        self.seconds[name] = time.perf_counter() - t0
        if self.on_step is not None:
            self.on_step(name, report, self.seconds[name])
        return report

    def report(self, notes: Iterable[str] = ()) -> PipelineReport:
        return PipelineReport(
            self.dry_run,
            self.now,
            self.agents,
            self.reports,
            self.seconds,
            time.perf_counter() - self.started,
            tuple(notes),
            self.pipeline.scope,
        )


def run_agents(
    pipeline: Pipeline,
    *,
    now: float,
    dry_run: bool = False,
    agents: Iterable[str] | None = None,
    notes: Iterable[str] = (),
    on_step: StepListener | None = None,
    scope: RunScope | None = None,
) -> PipelineReport:
    """Run the chosen agents in order without Prefect; ``on_step`` sees each report;
    ``scope`` makes it an incremental run (agents.changes), None a full one."""
    pipeline.scope = scope
    run = PipelineRun(pipeline, now=now, dry_run=dry_run, agents=agents, on_step=on_step)
    for name in run.agents:
        run.step(name)
    return run.report(notes)


__all__ = [
    "AGENT_ORDER",
    "Pipeline",
    "PipelineConfig",
    "PipelineReport",
    "PipelineRun",
    "StepListener",
    "StepRunner",
    "gc_frozen",
    "parse_mode",
    "pipeline_config",
    "run_agents",
    "select_agents",
]
