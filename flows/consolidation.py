"""The consolidation pipeline as a Prefect flow: decay -> cluster -> merge -> promote -> relations.

Each task is a thin call into its agent (agents.pipeline.Pipeline.step). Tasks receive live
collaborators, so none is cached (NO_CACHE); only the steps that write to disk or the vault
retry. Before clustering, the flow embeds what the embedding cache lacks as mapped tasks, so a
Dask task runner (``task_runner="dask"``) spreads the model work over processes or machines.
The run's tables are published as a markdown artifact; agents log through their own loggers,
routed to the Prefect run log when the flow starts (never at import time). A live run appends
its record to ``consolidation-runs.jsonl`` itself, so a deployment's run is recorded like the
CLI's.

A run is incremental (agents.incremental): it looks only at what changed since the last run
(``consolidation-state.npz``, left by every live run of all five agents) and at memories that
crossed a decay bar by time alone; ``full=True`` (``--full``, the weekly deployment) looks at
every memory.

The flow's parameters are the deployments' (prefect.yaml); the flow turns them into one
``RunOptions`` at its start. ``run_pipeline(settings, RunOptions(...))`` runs the same flow
in-process (no server to start), with ``RunOptions.on_step`` told after each agent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import opaque, quote

from cortexgraph.agents import incremental
from cortexgraph.agents.cluster_report import ClusterReport
from cortexgraph.agents.decay_findings import DecayReport
from cortexgraph.agents.ltm_promoter import PromoteReport, PromotionFailedError
from cortexgraph.agents.pipeline import (
    AGENT_ORDER,
    Pipeline,
    PipelineReport,
    PipelineRun,
    StepListener,
    select_agents,
)
from cortexgraph.agents.relationship_discovery import RelationshipReport
from cortexgraph.agents.semantic_merge import MergeReport
from cortexgraph.flows.embedding_tasks import embed_merged, warm_embeddings
from cortexgraph.flows.heartbeat import flow_run_heartbeats, in_process_heartbeats
from cortexgraph.flows.orchestration_errors import (
    OrchestrationError,
    orchestration_message,
    prefect_failed,
)
from cortexgraph.flows.pipeline_setup import RunOptions, build_pipeline
from cortexgraph.flows.run_logs import name_unknown_env, route_agent_logs
from cortexgraph.flows.untouched_run import untouched_run, wants_embeddings
from cortexgraph.flows.vault_scope import refresh_changed_notes
from cortexgraph.run_state import (
    appended_ids,
    files_now,
    files_seen,
    load_run_state,
    run_files,
    save_run_state,
)
from cortexgraph.settings import Settings, load_settings
from cortexgraph.storage.protocol import WriteLog
from cortexgraph.user_store import record_run

if TYPE_CHECKING:
    from cortexgraph.flows.wiring import Collaborators


@task(name="decay", cache_policy=NO_CACHE)
def decay_task(pipeline: Pipeline, now: float, dry_run: bool) -> DecayReport:
    return pipeline.step("decay", now=now, dry_run=dry_run, previous={})


@task(name="cluster", cache_policy=NO_CACHE)
def cluster_task(pipeline: Pipeline, now: float, dry_run: bool) -> ClusterReport:
    return pipeline.step("cluster", now=now, dry_run=dry_run, previous={})


@task(name="merge", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=2)
def merge_task(
    pipeline: Pipeline, now: float, dry_run: bool, clusters: ClusterReport | None
) -> MergeReport:
    previous = {"cluster": clusters} if clusters is not None else {}
    return pipeline.step("merge", now=now, dry_run=dry_run, previous=previous)


@task(name="promote", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=2)
def promote_task(pipeline: Pipeline, now: float, dry_run: bool) -> PromoteReport:
    report = pipeline.step("promote", now=now, dry_run=dry_run, previous={})
    if report.failed and not report.promotions:
        # Promotion is idempotent: a retry writes only the notes that failed.
        raise PromotionFailedError(f"{len(report.failed)} note(s) failed: {report.failed[0][1]}")
    return report


@task(name="relations", cache_policy=NO_CACHE)
def relations_task(pipeline: Pipeline, now: float, dry_run: bool) -> RelationshipReport:
    return pipeline.step("relations", now=now, dry_run=dry_run, previous={})


RUN_AUTHOR = "consolidation"  # who signs a run's one commit of issue changes


def _embed_then_cluster(
    pipeline: Pipeline, now: float, dry_run: bool, collab: Collaborators, batch_size: int
) -> ClusterReport:
    """What the cache lacks is embedded first, as mapped tasks (spread by a Dask runner). An
    incremental run with nothing new compares nothing: the cache is not even read."""
    scope = pipeline.scope
    anew = pipeline.judges_anew  # the cluster step compares every memory
    if collab.embedder is not None and (scope is None or anew or scope.changed):
        only = None if scope is None or anew else scope.changed
        embedded = warm_embeddings(collab.store, collab.embedder, batch_size, only)
        batches = -(-embedded // batch_size)
        collab.notes.append(f"embedded {embedded} new text(s) in {batches} embed-batch task(s)")
    return cluster_task(pipeline, now, dry_run)


def run_consolidation(settings: Settings, options: RunOptions) -> PipelineReport:
    """The flow's body: the chosen agents in pipeline order, each a task; a live run is
    recorded (user_store.record_run)."""
    started = time.perf_counter()
    untouched = untouched_run(settings, options, started)
    if untouched is not None:
        return untouched
    pipeline, collab = build_pipeline(settings, options)
    if not options.dry_run and "relations" in options.agents:
        # Entities of new memories first (spaCy in batches): merge and relations see them.
        pipeline.relations.read_entities()
    # What the run writes from here on, told from what the MCP server or a hook saves
    # meanwhile: those stay changed for the next run (agents.incremental.state_after).
    # The agents' issue changes are one commit, at collab.finish.
    with collab.store.recording_writes() as writes, collab.one_issue_commit(RUN_AUTHOR):
        # The relations and issue files as the run found them: what else lands in them
        # before the end is not the run's to record as seen (run_state.files_seen).
        opened = files_now(run_files(settings, collab.tracker))
        return _run_pipeline_steps(settings, options, pipeline, collab, started, writes, opened)


def _run_pipeline_steps(
    settings: Settings,
    options: RunOptions,
    pipeline: Pipeline,
    collab: Collaborators,
    started: float,
    writes: WriteLog,
    opened: dict[str, tuple[int, ...]],
) -> PipelineReport:
    now = time.time() if options.now is None else float(options.now)
    previous = load_run_state(settings.storage_path)
    memories_file, _, generation = run_files(settings)
    changes = incremental.begin(
        pipeline,
        previous,
        now,
        full=options.full,
        written=lambda: appended_ids(previous, memories_file, generation),
        embeddings=wants_embeddings(settings, options),
    )
    if changes.full_because:
        collab.notes.append(changes.full_because)
    run = PipelineRun(
        pipeline,
        now=now,
        dry_run=options.dry_run,
        agents=options.agents,
        on_step=options.on_step,
        started=started,
    )
    with _report_if_stopped(run, collab.notes):
        # DecayAnalyzer -> ClusterDetector -> SemanticMerge -> LTMPromoter -> RelationshipDiscovery
        run.step("decay", decay_task)
        clusters = run.step("cluster", _embed_then_cluster, collab, options.embed_batch_size)
        # opaque: Prefect links the merge to the cluster task's result without walking every
        # cluster in it for futures (2 ms of a 10k +100 run's merge step).
        run.step("merge", merge_task, opaque(clusters))
        run.step("promote", promote_task)
        run.step("relations", relations_task)
        if (
            not options.dry_run
            and pipeline.scope is not None
            and collab.sink is not None
            and run.wants("promote", "relations")
        ):
            # Incremental: only the notes what changed can touch (the weekly full run: all).
            collab.notes.append(
                f"vault: {refresh_changed_notes(collab.store, collab.sink, run, now)}"
            )
        elif not options.dry_run and collab.sink is not None and run.wants("promote", "relations"):
            from cortexgraph.vault_sync.refresh import refresh_notes

            # Notes promoted earlier: short titles, and Related lists that follow new relations.
            collab.notes.append(
                f"vault: {refresh_notes(collab.store, collab.sink, now=now).summary()}"
            )
        if (
            not options.dry_run
            and collab.embedder is not None
            and run.wants("merge")
            and (pipeline.scope is None or pipeline.scope.changed)
        ):
            # What the merge made: embedded now only if this run's model is loaded already.
            only = None if pipeline.scope is None else pipeline.scope.changed
            note = embed_merged(collab.store, collab.embedder, options.embed_batch_size, only)
            if note:
                collab.notes.append(note)
        collab.finish()
    report = run.report(collab.notes)
    if not options.dry_run:
        # The run's record belongs to the flow, however it was started (a deployment, the
        # CLI, run_pipeline): status, memory_status and --scheduled read it.
        record_run(settings.storage_path, report, time.time())
        if set(run.agents) == set(AGENT_ORDER):  # a partial run leaves the changes for the next
            # The files after the run's last write, before state_after reads the store again:
            # whatever lands in between is seen by it (a write by someone else: no record).
            # None: another writer added a relation or an issue since the open.
            paths = run_files(settings, collab.tracker)
            files = files_seen(paths, opened, writes.relations, collab.issue_batch)
            state = incremental.state_after(pipeline, changes, report, now, writes, files)
            save_run_state(settings.storage_path, state)
    return report


def _publish(report: PipelineReport) -> None:
    create_markdown_artifact(
        report.to_markdown(),
        key="consolidation-report",
        description="What each consolidation agent found and did",
    )


@contextmanager
def _report_if_stopped(run: PipelineRun, notes: list[str]) -> Iterator[None]:
    """A run that stops part-way still leaves its report in the UI: what the agents before
    the failure did (applied, and kept) and where and why it stopped. Not recorded as a run."""
    try:
        yield
    except Exception as exc:
        where = next((f"at {a}" for a in run.agents if a not in run.reports), "after the agents")
        try:
            _publish(run.report([*notes, f"stopped {where}: {type(exc).__name__}: {exc}"]))
        except Exception:  # Prefect's API may be what failed: the run's own error goes on
            get_run_logger().warning("the stopped run's report was not published", exc_info=True)
        raise


@flow(name="consolidate", log_prints=False)
def consolidate(
    storage_path: str | None = None,
    vault_path: str | None = None,
    dry_run: bool = False,
    agents: list[str] | None = None,
    merge_mode: str = "apply",
    gc: str = "off",
    use_embeddings: bool = True,
    now: float | None = None,
    embed_batch_size: int = 1024,
    on_step: StepListener | None = None,
    full: bool = False,
) -> quote:  # of the PipelineReport
    """Run the consolidation agents over one store; publish their tables as an artifact.

    ``on_step`` is for in-process runs (run_pipeline: the CLI's progress); a deployment's
    parameters never set it. ``full``: every memory, not only what changed since the last
    run (the weekly deployment).

    Returns the report quoted (``.unquote()`` gives it; ``run_pipeline`` does): Prefect walks
    a flow's return value for futures and states to resolve, and a report holds what the run
    looked at (the decay report's marks of 44k carried memories at 100k: 1.15 CPU s of a run
    after no change); ``quote`` is Prefect's way to keep it from introspecting a value. No
    result is persisted either way.
    """
    route_agent_logs()
    name_unknown_env()
    with flow_run_heartbeats():  # in-process runs send their own (flows.heartbeat)
        settings = load_settings(storage_path=storage_path, ltm_vault_path=vault_path)
        options = RunOptions(
            dry_run=dry_run,
            agents=select_agents(agents),
            merge_mode=merge_mode,
            gc=gc,
            use_embeddings=use_embeddings,
            now=now,
            embed_batch_size=embed_batch_size,
            on_step=on_step,
            full=full,
        )
        report = run_consolidation(settings, options)
        _publish(report)
        get_run_logger().info(
            "consolidation %s in %.2f s: %s",
            "previewed" if dry_run else "done",
            report.total_seconds,
            "; ".join(t.summary for t in report.tables()),
        )
        return quote(report)


def make_task_runner(kind: str, workers: int = 2, address: str | None = None) -> Any:
    """``threads`` (default, in-process) or ``dask``: a temporary local Dask cluster of
    ``workers`` processes, or the running cluster at ``address`` (``tcp://host:8786``).

    Dask worker processes are spawned, so a script that runs the flow with the Dask runner
    needs the ``if __name__ == "__main__":`` guard (console scripts and pytest have it).
    """
    if kind == "threads":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=workers)
    if kind == "dask":
        from prefect_dask import DaskTaskRunner

        if address:
            return DaskTaskRunner(address=address)
        return DaskTaskRunner(
            cluster_kwargs={
                "n_workers": workers,
                "threads_per_worker": 1,
                "processes": True,
                "dashboard_address": None,
                "silence_logs": logging.WARNING,
            }
        )
    from cortexgraph.storage.errors import InvalidInputError

    raise InvalidInputError(f"unknown task runner {kind!r}; choose threads or dask")


def run_pipeline(settings: Settings, options: RunOptions | None = None) -> PipelineReport:
    """Run the ``consolidate`` flow in this process (on ``options.task_runner``) and return
    its report."""
    from cortexgraph.flows.local_server import local_prefect_api

    options = options or RunOptions()
    runner = make_task_runner(options.task_runner, address=options.dask_address)
    with local_prefect_api() as ours, in_process_heartbeats():  # see flows.heartbeat
        try:
            quoted = consolidate.with_options(task_runner=runner)(
                storage_path=str(settings.storage_path),
                vault_path=str(settings.vault_path),
                dry_run=options.dry_run,
                agents=list(options.agents),
                merge_mode=options.merge_mode,
                gc=options.gc,
                use_embeddings=options.use_embeddings,
                now=options.now,
                embed_batch_size=options.embed_batch_size,
                on_step=options.on_step,
                full=options.full,
            )
            report: PipelineReport = quoted.unquote()
            return report
        except Exception as exc:
            if not prefect_failed(exc):
                raise
            raise OrchestrationError(orchestration_message(exc, ours)) from exc


__all__ = [
    "OrchestrationError",
    "RunOptions",
    "consolidate",
    "make_task_runner",
    "run_consolidation",
    "run_pipeline",
]
