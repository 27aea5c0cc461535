"""The consolidation pipeline as a Prefect flow: decay -> cluster -> merge -> promote -> relations.

Each task is a thin call into its agent (agents.pipeline.Pipeline.step). Tasks receive live
collaborators, so none is cached (NO_CACHE); only the steps that write to disk or the vault
retry. Before clustering, the flow embeds what the embedding cache lacks as mapped tasks, so a
Dask task runner (``task_runner="dask"``) spreads the model work over processes or machines.
The run's tables are published as a markdown artifact; agents log through their own loggers,
routed to the Prefect run log when the flow starts (never at import time).

``run_pipeline(settings, ...)`` runs the same flow in-process: no server to start.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from cortexgraph.agents.ltm_promoter import PromoteReport, PromotionFailedError
from cortexgraph.agents.pipeline import Pipeline, PipelineReport, select_agents
from cortexgraph.flows.embedding_tasks import warm_embeddings
from cortexgraph.flows.pipeline_setup import build_pipeline, pipeline_config
from cortexgraph.settings import Settings, load_settings

StepListener = Callable[[str, Any, float], None]
_listeners: list[StepListener] = []  # the CLI's progress display; in-process runs only


@task(name="decay", cache_policy=NO_CACHE)
def decay_task(pipeline: Pipeline, now: float, dry_run: bool) -> Any:
    return pipeline.step("decay", now=now, dry_run=dry_run, previous={})


@task(name="cluster", cache_policy=NO_CACHE)
def cluster_task(pipeline: Pipeline, now: float, dry_run: bool) -> Any:
    return pipeline.step("cluster", now=now, dry_run=dry_run, previous={})


@task(name="merge", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=2)
def merge_task(pipeline: Pipeline, now: float, dry_run: bool, clusters: Any) -> Any:
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
def relations_task(pipeline: Pipeline, now: float, dry_run: bool) -> Any:
    return pipeline.step("relations", now=now, dry_run=dry_run, previous={})


def _route_agent_logs() -> None:
    """What PREFECT_LOGGING_EXTRA_LOGGERS=agents does, for runs that did not set it."""
    from prefect.logging.handlers import APILogHandler

    logger = logging.getLogger("agents")
    if not any(isinstance(h, APILogHandler) for h in logger.handlers):
        logger.addHandler(APILogHandler())
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)


def execute(
    settings: Settings,
    *,
    dry_run: bool = False,
    agents: Sequence[str] | None = None,
    merge_mode: str = "apply",
    gc: str = "off",
    use_embeddings: bool = True,
    now: float | None = None,
    embed_batch_size: int = 1024,
) -> PipelineReport:
    """The flow body: wire collaborators, run the chosen agents as tasks, return the report."""
    chosen = select_agents(agents)
    ts = time.time() if now is None else float(now)
    started = time.perf_counter()
    pipeline, collab = build_pipeline(
        settings, dry_run=dry_run, use_embeddings=use_embeddings, merge_mode=merge_mode, gc=gc
    )
    reports: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    for name in chosen:
        t0 = time.perf_counter()
        if name == "decay":
            reports[name] = decay_task(pipeline, ts, dry_run)
        elif name == "cluster":
            if collab.embedder is not None:
                embedded = warm_embeddings(collab.store, collab.embedder, embed_batch_size)
                batches = -(-embedded // embed_batch_size)
                collab.notes.append(
                    f"embedded {embedded} new text(s) in {batches} embed-batch task(s)"
                )
            reports[name] = cluster_task(pipeline, ts, dry_run)
        elif name == "merge":
            reports[name] = merge_task(pipeline, ts, dry_run, reports.get("cluster"))
        elif name == "promote":
            reports[name] = promote_task(pipeline, ts, dry_run)
        else:
            reports[name] = relations_task(pipeline, ts, dry_run)
        seconds[name] = time.perf_counter() - t0
        for listener in _listeners:
            listener(name, reports[name], seconds[name])
    if not dry_run and collab.sink is not None and {"promote", "relations"} & set(chosen):
        from cortexgraph.vault_sync.refresh import refresh_notes

        # Notes promoted earlier: short titles, and Related lists that follow new relations.
        collab.notes.append(f"vault: {refresh_notes(collab.store, collab.sink, now=ts).summary()}")
    collab.finish()
    return PipelineReport(
        dry_run, ts, chosen, reports, seconds, time.perf_counter() - started, tuple(collab.notes)
    )


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
) -> PipelineReport:
    """Run the consolidation agents over one store; publish their tables as an artifact."""
    _route_agent_logs()
    settings = load_settings(storage_path=storage_path, ltm_vault_path=vault_path)
    report = execute(
        settings,
        dry_run=dry_run,
        agents=agents,
        merge_mode=merge_mode,
        gc=gc,
        use_embeddings=use_embeddings,
        now=now,
        embed_batch_size=embed_batch_size,
    )
    create_markdown_artifact(
        report.to_markdown(),
        key="consolidation-report",
        description="What each consolidation agent found and did",
    )
    get_run_logger().info(
        "consolidation %s in %.2f s: %s",
        "previewed" if dry_run else "done",
        report.total_seconds,
        "; ".join(t.summary for t in report.tables()),
    )
    return report


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


def run_pipeline(
    settings: Settings,
    *,
    dry_run: bool = False,
    agents: Sequence[str] | None = None,
    merge_mode: str = "apply",
    gc: str = "off",
    use_embeddings: bool = True,
    now: float | None = None,
    task_runner: str = "threads",
    on_step: StepListener | None = None,
    embed_batch_size: int = 1024,
    dask_address: str | None = None,
) -> PipelineReport:
    """Run the ``consolidate`` flow in this process and return its report."""
    runner = make_task_runner(task_runner, address=dask_address)
    flow_fn = consolidate.with_options(task_runner=runner)
    if on_step is not None:
        _listeners.append(on_step)
    try:
        return flow_fn(
            storage_path=str(settings.storage_path),
            vault_path=str(settings.vault_path),
            dry_run=dry_run,
            agents=list(agents) if agents else None,
            merge_mode=merge_mode,
            gc=gc,
            use_embeddings=use_embeddings,
            now=now,
            embed_batch_size=embed_batch_size,
        )
    finally:
        if on_step is not None:
            _listeners.remove(on_step)


__all__ = ["consolidate", "execute", "make_task_runner", "pipeline_config", "run_pipeline"]
