"""Flow runs without a configured Prefect API use ``prefect server start`` in a child process
(flows/local_server.py), and fall back to Prefect's temporary server if it does not come up."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from child_env import child_env, run_module
from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED,
    temporary_settings,
)
from prefect_db import copy_database

from cortexgraph.flows import local_server


def _no_api_env(tmp_path: Path) -> dict[str, str]:
    """A child's environment with no Prefect API configured, in a Prefect home of its own."""
    env = child_env(PREFECT_HOME=str(tmp_path / "prefect-home"))
    return {k: v for k, v in env.items() if not k.startswith("PREFECT_API")}


def _consolidate(
    tmp_path: Path, *options: str, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """``cortexgraph-consolidate --json`` on the store and vault under ``tmp_path`` (created: a
    named store or vault must exist)."""
    (tmp_path / "store").mkdir(exist_ok=True)
    (tmp_path / "vault").mkdir(exist_ok=True)
    store, vault = str(tmp_path / "store"), str(tmp_path / "vault")
    return run_module(
        "cortexgraph.cli.consolidate",
        *("--storage-path", store, "--vault", vault, *options, "--json"),
        env=env,
        timeout=timeout,
    )


@pytest.fixture
def no_api():
    """Prefect settings as a user without a server has them (the tests' harness sets one)."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        assert not PREFECT_API_URL.value()
        yield
    local_server._stop()
    local_server._gave_up = False
    for signum, handler in handlers.items():  # starting a server set its own
        signal.signal(signum, handler)


@pytest.mark.slow
def test_a_run_without_an_api_gets_its_own_server_and_the_process_reuses_it(
    no_api, tmp_path, monkeypatch, prefect_template
):
    # The server's Prefect home is the test's, holding a migrated database (a user's second run).
    copy_database(prefect_template, tmp_path / "prefect-home" / "prefect.db")
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect-home"))
    checking_before = PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED.value()
    with local_server.local_prefect_api() as url:
        assert url and PREFECT_API_URL.value() == url
        with urllib.request.urlopen(f"{url}/health", timeout=10) as answer:
            assert answer.status == 200
        server = local_server._server
        assert server is not None and server.process.poll() is None
        # our own child on this Prefect install: no client asks it for its version
        assert PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED.value() is False
    assert not PREFECT_API_URL.value()  # the settings are only for what ran inside
    assert PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED.value() is checking_before
    with local_server.local_prefect_api() as again:
        assert again == url  # one server per process
    local_server._stop()
    assert server.process.poll() is not None  # stopped (at exit, or here)


def test_a_configured_api_is_used_as_it_is(no_api):
    with (
        temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}),
        local_server.local_prefect_api() as url,
    ):
        assert url is None and PREFECT_API_URL.value() == "http://127.0.0.1:9/api"
    assert local_server._server is None  # nothing was started


def test_a_server_that_does_not_come_up_falls_back_with_its_output_logged(
    no_api, monkeypatch, caplog
):
    real_popen = subprocess.Popen
    spawned = []

    def failing(args, **kwargs):
        spawned.append(args)
        return real_popen(
            [sys.executable, "-c", "print('port taken'); raise SystemExit(3)"], **kwargs
        )

    monkeypatch.setattr(local_server.subprocess, "Popen", failing)
    with (
        caplog.at_level(logging.WARNING, logger=local_server.__name__),
        local_server.local_prefect_api() as url,
    ):
        assert url is None and not PREFECT_API_URL.value()
    assert "did not come up" in caplog.text and "port taken" in caplog.text
    assert local_server._server is None
    with local_server.local_prefect_api() as again:  # later runs don't wait for it again
        assert again is None
    assert len(spawned) == 1


@pytest.mark.slow
def test_the_cli_runs_its_flow_on_prefects_own_server(tmp_path: Path, prefect_template: Path):
    """The child's Prefect home holds a migrated database, as on a user's second run: the
    migration from an empty one is Prefect's start-up call, run once per session to make
    ``prefect_template``."""
    copy_database(prefect_template, tmp_path / "prefect-home" / "prefect.db")
    out = _consolidate(tmp_path, env=_no_api_env(tmp_path), timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    # The run is in the database of the server the CLI started (in the child's PREFECT_HOME),
    # completed: read from that database, not from the console log, whose engine lines were
    # missing once in a full parallel suite while the run itself had completed.
    import sqlite3

    with sqlite3.connect(tmp_path / "prefect-home" / "prefect.db") as db:
        runs = db.execute("SELECT state_type FROM flow_run").fetchall()
    assert runs == [("COMPLETED",)], (runs, out.stderr[-3000:])
    assert "temporary server" not in out.stderr  # ours came up, Prefect's was not needed
    assert '"agents": ["decay", "cluster", "merge", "promote", "relations"]' in out.stdout


def _process_with_a_server(tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    """A Python process that starts its local Prefect server and waits; with the server's pid."""
    script = (
        "import time\n"
        "from cortexgraph.flows import local_server\n"
        "local_server.start_local_server()\n"
        "print(local_server._server.process.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script],
        env=_no_api_env(tmp_path),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    return parent, int(parent.stdout.readline())


def test_a_terminated_process_takes_its_server_with_it(tmp_path: Path):
    # SIGTERM would end the process without its exit handlers; the server must not outlive it.
    import time

    parent, child = _process_with_a_server(tmp_path)
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(30) == 128 + signal.SIGTERM
    parent.stdout.close()
    deadline = time.monotonic() + 15
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{child}").exists(), "the server outlived its process"


def test_an_unreachable_prefect_api_is_one_line_of_error_not_a_traceback(tmp_path: Path):
    """A configured Prefect server that is not running (a user's most likely Prefect failure)
    printed a 70-line traceback and, with --json, nothing on stdout. Now: exit 1, one error
    that names the API and what to do, as JSON with --json, and the store untouched."""
    import json
    import socket

    from cortexgraph.storage import open_store

    open_store(tmp_path / "store").save("Sam prefers PostgreSQL", now=1_700_000_000)
    before = (tmp_path / "store" / "memories.jsonl").read_bytes()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    api = f"http://127.0.0.1:{port}/api"
    env = _no_api_env(tmp_path) | {"PREFECT_API_URL": api, "PREFECT_CLIENT_MAX_RETRIES": "0"}
    out = _consolidate(tmp_path, "--no-embeddings", env=env, timeout=300)
    assert out.returncode == 1, out.stderr[-3000:]
    assert "Traceback" not in out.stderr
    error = json.loads(out.stdout)["error"]
    assert error.startswith("Prefect could not run the consolidation flow: ")
    assert f"Failed to reach API at {api}" in error and "Unset PREFECT_API_URL" in error
    assert (tmp_path / "store" / "memories.jsonl").read_bytes() == before


def test_only_prefects_own_failures_become_an_orchestration_error():
    import httpx

    from cortexgraph.flows.orchestration_errors import prefect_failed
    from cortexgraph.storage.errors import StorageError

    unreachable = RuntimeError("Failed to reach API at http://127.0.0.1:9/api/")
    unreachable.__cause__ = httpx.ConnectError("Connection refused")
    ours = StorageError("cannot write memories.jsonl")
    ours.__cause__ = httpx.ConnectError("an HTTP call inside our own code")
    assert prefect_failed(unreachable)
    assert not prefect_failed(ours)  # our typed errors are said as they are
    assert not prefect_failed(RuntimeError("a bug"))  # a bug keeps its traceback


def _gone(pid: int) -> bool:
    """No such process, or only its zombie (reaped by init once reparented)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def test_a_killed_process_takes_its_server_with_it(tmp_path: Path):
    # Issue 30, Medium 9: kill -9 of cortexgraph-consolidate left its server running (5 of 5
    # trials, ~230 MB each). No exit handler runs on SIGKILL: the server must notice itself.
    import time

    parent, child = _process_with_a_server(tmp_path)
    parent.kill()
    parent.wait(30)
    parent.stdout.close()
    deadline = time.monotonic() + 20
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    if not _gone(child):
        import os

        os.kill(child, signal.SIGKILL)
        pytest.fail("the server outlived its killed parent")
