"""The flow itself records a live run and routes the agents' logs to the run's logs in Prefect.

Through Prefect: the ``consolidate`` flow is called as a deployment's worker calls it (the
engine, the session's test server), and the run's logs are read back through Prefect's client.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cortexgraph.cli.consolidate import app
from cortexgraph.flows.consolidation import consolidate
from cortexgraph.user_store import recent_runs

NOW = 1_760_000_000.0 + 3600


@pytest.fixture
def no_beads(monkeypatch):
    monkeypatch.setenv("CORTEXGRAPH_BEADS_ENABLED", "false")
    monkeypatch.setenv("CORTEXGRAPH_ENABLE_EMBEDDINGS", "false")


def _run_logs(flow_run_id) -> list[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogHandler

    APILogHandler().flush()  # the log worker sends in batches
    with get_client(sync_client=True) as client:
        logs = client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id]))
        )
    return [f"{log.name}: {log.message}" for log in logs]


def test_a_flow_run_as_a_deployment_runs_it_is_recorded_once(prefect_harness, demo_dirs, no_beads):
    store_dir, vault = demo_dirs
    state = consolidate(
        storage_path=str(store_dir),
        vault_path=str(vault),
        agents=["decay", "cluster"],
        use_embeddings=False,
        now=NOW,
        return_state=True,
    )
    assert state.is_completed()
    [run] = recent_runs(store_dir, 10)
    assert run["agents"] == ["decay", "cluster"] and "decay" in run["summaries"]
    # cortexgraph-consolidate status (and --scheduled) now see the deployment's run
    out = CliRunner().invoke(app, ["--storage-path", str(store_dir), "--json", "status"])
    assert out.exit_code == 0 and json.loads(out.stdout)["agents"] == ["decay", "cluster"]
    # a dry run through the flow records nothing
    consolidate(storage_path=str(store_dir), vault_path=str(vault), dry_run=True, now=NOW)
    assert len(recent_runs(store_dir, 10)) == 1


def test_the_cli_run_is_recorded_once_not_twice(prefect_harness, demo_dirs, no_beads):
    store_dir, vault = demo_dirs
    args = ["--storage-path", str(store_dir), "--vault", str(vault), "--agent", "decay"]
    out = CliRunner().invoke(app, [*args, "--json", "--no-embeddings"])
    assert out.exit_code == 0, out.output
    assert [r["agents"] for r in recent_runs(store_dir, 10)] == [["decay"]]


def test_an_agent_log_line_reaches_the_runs_logs_in_prefect(prefect_harness, demo_dirs, no_beads):
    store_dir, vault = demo_dirs
    state = consolidate(
        storage_path=str(store_dir),
        vault_path=str(vault),
        agents=["decay"],
        dry_run=True,
        use_embeddings=False,
        now=NOW,
        return_state=True,
    )
    lines = _run_logs(state.state_details.flow_run_id)
    decay = [line for line in lines if line.startswith("cortexgraph.agents.decay_analyzer: ")]
    assert decay and "scanned" in decay[0], lines


def test_prefect_does_not_walk_the_report_the_flow_returns(
    prefect_harness, demo_dirs, no_beads, monkeypatch
):
    """Prefect walks a flow's return value for futures to resolve; a report holds what the
    run looked at (44k carried memories' marks at 100k memories: 1.15 CPU s a run). The flow returns
    it quoted, so no finding is visited (Prefect stops at the quote; a task's result is looked
    at one level deep), and ``unquote`` gives the whole report."""
    import prefect.futures
    import prefect.utilities.collections as collections

    from cortexgraph.agents.pipeline import PipelineReport

    visited: list[str] = []
    real = collections.visit_collection

    def spy(expr, *args, **kwargs):
        visited.append(f"{type(expr).__module__}.{type(expr).__qualname__}")
        return real(expr, *args, **kwargs)

    monkeypatch.setattr(collections, "visit_collection", spy)  # its own recursion
    monkeypatch.setattr(prefect.futures, "visit_collection", spy)  # a flow's return value
    store_dir, vault = demo_dirs
    quoted = consolidate(
        storage_path=str(store_dir), vault_path=str(vault), agents=["decay"], now=NOW
    )
    report = quoted.unquote()
    assert isinstance(report, PipelineReport) and report.reports["decay"].scanned > 0
    assert report.reports["decay"].findings
    assert "cortexgraph.agents.decay_findings.DecayFinding" not in visited
