"""The real thing: a prefect server, deployments from prefect.yaml, a process worker, a run."""

from __future__ import annotations

import os
import re
import signal
import socket
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, timeout: float) -> None:
    import urllib.request

    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:  # local test server
                if r.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise TimeoutError(f"{url} did not come up in {timeout} s")


def _stop(proc: subprocess.Popen, timeout: float = 30) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_deploy_from_prefect_yaml_and_run_on_a_worker(tmp_path):
    from cortexgraph.demo_data import seed_store

    store_dir, vault = tmp_path / "store", tmp_path / "vault"
    seed_store(open_store(store_dir), now=SEED_NOW)
    relations_before = len(open_store(store_dir).relations())
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "PREFECT_API_URL": api,
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",
        "CORTEXGRAPH_STORAGE_PATH": str(store_dir),
        "LTM_VAULT_PATH": str(vault),
        "CORTEXGRAPH_BEADS_ENABLED": "false",
        "CORTEXGRAPH_ENABLE_EMBEDDINGS": "false",
        "OMP_NUM_THREADS": "1",
    }
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    worker = None
    try:
        _wait_http(f"{api}/health", 180)

        def cli(*args: str, timeout: float = 180) -> str:
            res = subprocess.run(
                [PREFECT, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout
            )
            assert res.returncode == 0, f"prefect {' '.join(args)}:\n{res.stdout}\n{res.stderr}"
            return res.stdout

        cli("work-pool", "create", "cortexgraph-local", "--type", "process")
        out = cli("--no-prompt", "deploy", "--all")
        assert "consolidate-hourly" in out and "decay-nightly" in out
        wlog = (tmp_path / "worker.log").open("w")
        worker = subprocess.Popen(
            [PREFECT, "worker", "start", "--pool", "cortexgraph-local"],
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
        logs = cli("flow-run", "logs", run_id.group(1))
        assert "decay: " in logs and "scanned" in logs, logs
    finally:
        if worker is not None:
            _stop(worker)  # the worker first, then the server it talks to
        _stop(server)
