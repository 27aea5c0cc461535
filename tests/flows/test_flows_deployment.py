"""The real thing: deployments from prefect.yaml, a process worker, a run on a Prefect server."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cortexgraph.agents.pipeline import AGENT_ORDER
from cortexgraph.storage import open_store
from cortexgraph.user_store import recent_runs

REPO = Path(__file__).resolve().parents[2]
PREFECT = str(Path(sys.executable).with_name("prefect"))
SEED_NOW = 1_760_000_000.0
POOL = "cortexgraph-local"  # prefect.yaml's work pool


def _stop(proc: subprocess.Popen, timeout: float = 30) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _logs_once_they_hold(flow_run_id: str, *parts: str, timeout: float = 60) -> str:
    """The run's log messages on the server, asked again until they hold every part: the run's
    process sends its logs in batches and may still be sending once the run shows Completed."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    deadline = time.monotonic() + timeout
    with get_client(sync_client=True) as client:
        while True:
            logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
            messages = "\n".join(log.message for log in logs)
            if all(part in messages for part in parts) or time.monotonic() > deadline:
                return messages
            time.sleep(0.5)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_deploy_from_prefect_yaml_and_run_on_a_worker(tmp_path, prefect_harness):
    """Slow by nature: ``prefect deploy``, a worker and ``prefect deployment run`` are three
    Prefect CLI processes, and the worker runs the flow in a fourth. They talk to the session's
    Prefect server (``prefect_harness``; an ephemeral server runs no scheduler, so the
    deployments' schedules add no runs); the work pool is made and the run's logs read through
    the API from here."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate

    from cortexgraph.demo_data import seed_store

    store_dir, vault = tmp_path / "store", tmp_path / "vault"
    seed_store(open_store(store_dir), now=SEED_NOW)
    relations_before = len(open_store(store_dir).relations())
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "PREFECT_API_URL": prefect_harness,
        "PREFECT_WORKER_QUERY_SECONDS": "2",  # the run is picked up soon after it is made
        "DO_NOT_TRACK": "1",
        "CORTEXGRAPH_STORAGE_PATH": str(store_dir),
        "LTM_VAULT_PATH": str(vault),
        "CORTEXGRAPH_BEADS_ENABLED": "false",
        "CORTEXGRAPH_ENABLE_EMBEDDINGS": "false",
        "OMP_NUM_THREADS": "1",
        # a misspelt variable in the worker's environment: no program of ours starts the run's
        # process to name it on stderr, so the run's log must (else it passes silently)
        "CORTEXGRAPH_PROMOTE_TRESHOLD": "0.5",
    }
    with get_client(sync_client=True) as client:
        client.create_work_pool(WorkPoolCreate(name=POOL, type="process"))
    worker = None
    try:

        def cli(*args: str, timeout: float = 180) -> str:
            res = subprocess.run(
                [PREFECT, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout
            )
            assert res.returncode == 0, f"prefect {' '.join(args)}:\n{res.stdout}\n{res.stderr}"
            return res.stdout

        out = cli("--no-prompt", "deploy", "--all")
        assert "consolidate-hourly" in out and "decay-nightly" in out
        # A worker back from a long sleep, or a slow run, never starts a deployment's late
        # runs at once on one store: each deployment takes one run at a time, the rest queue.
        with get_client(sync_client=True) as client:
            for name in ("consolidate-hourly", "consolidate-weekly-full", "decay-nightly"):
                made = client.read_deployment_by_name(f"consolidate/{name}")
                limit = made.global_concurrency_limit
                assert limit is not None and limit.limit == 1, name
                strategy = made.concurrency_options and made.concurrency_options.collision_strategy
                assert str(getattr(strategy, "value", strategy)) == "ENQUEUE", name
        wlog = (tmp_path / "worker.log").open("w")
        worker = subprocess.Popen(
            [PREFECT, "worker", "start", "--pool", POOL],
            env=env,
            cwd=REPO,
            stdout=wlog,
            stderr=subprocess.STDOUT,
        )
        out = cli(
            "deployment",
            "run",
            "consolidate/consolidate-hourly",
            "--param",
            f"now={SEED_NOW + 3600}",
            "--watch",
            "--watch-timeout",
            "400",
            timeout=420,
        )
        assert "Completed" in out, out
        store = open_store(store_dir)
        assert len(store.relations()) > relations_before  # relationship discovery wrote
        assert any(m.promoted_to for m in store.list())  # promotion wrote notes
        assert list((vault).rglob("*.md"))
        # the flow recorded its run (status, memory_status and --scheduled read it) ...
        assert [r["agents"] for r in recent_runs(store_dir, 5)] == [list(AGENT_ORDER)]
        # ... and the agents' log lines are in the run's logs on the server
        run_id = re.search(r"UUID: ([0-9a-f-]{36})", out)
        assert run_id, out
        typo = "unknown setting CORTEXGRAPH_PROMOTE_TRESHOLD is ignored"
        messages = _logs_once_they_hold(run_id.group(1), "decay: ", "scanned", typo)
        assert "decay: " in messages and "scanned" in messages, messages
        assert f"{typo}; did you mean CORTEXGRAPH_PROMOTE_THRESHOLD?" in messages, messages
    finally:
        if worker is not None:
            _stop(worker)
