"""Prefect's own server for in-process flow runs when no Prefect API is configured.

Without ``PREFECT_API_URL``, Prefect starts a temporary server on a process's first flow run.
The process first imports the whole server, which takes about 3 s on a 2-core machine, only to
start it in a subprocess. That subprocess imports it again and comes up about 5 s later. This
was 8 of the 13-16 s the CLI took on an empty store.

Here ``prefect server start --no-services --no-ui`` runs in a subprocess instead, so the parent
never imports the server. A caller that starts it early (the CLI does, first thing) loads the
pipeline while the server comes up on the other core. Like Prefect's temporary server, there
is one server per process: every run in the process uses it, and it stops when the process
exits. If it does not come up, the run falls back to Prefect's temporary server, and the log
says why.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO

log = logging.getLogger(__name__)

_lock = threading.Lock()
_server: PrefectServerProcess | None = None
_gave_up = False  # one that did not come up: later runs go straight to the temporary server


class PrefectServerProcess:
    """``prefect server start`` on a free loopback port, as a child of this process."""

    def __init__(self) -> None:
        with socket.socket() as s:  # a free port now; a race lost shows as an early exit
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.api_url = f"http://127.0.0.1:{self.port}/api"
        # The server's output, read only if it does not come up; closed by stop().
        self._log: IO[bytes] = tempfile.TemporaryFile(  # noqa: SIM115
            prefix="cortexgraph-prefect-server-"
        )
        # The server dies with this process, however it ends (kill -9 included): on Linux
        # the kernel sends it SIGTERM when its parent dies (PR_SET_PDEATHSIG, set between fork
        # and exec), and everywhere a watchdog thread in the child ends it once its parent
        # pid changes (_serve_child).
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _CHILD_CODE,
                str(os.getpid()),
                "server",
                "start",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--no-services",
                "--no-ui",
                "--analytics-off",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            preexec_fn=_parent_death_signal(),
        )
        self.ready = False

    def wait_ready(self, timeout: float) -> bool:
        """True once the API answers its health check; False if the server exited or
        ``timeout`` seconds passed."""
        deadline = time.monotonic() + timeout
        while not self.ready and time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.api_url}/health", timeout=2) as answer:
                    self.ready = answer.status == 200
            except OSError:
                pass
            if not self.ready:  # refused (not listening yet) or not healthy yet: ask again soon
                time.sleep(0.1)
        return self.ready

    def output_tail(self, chars: int = 600) -> str:
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-chars:].strip()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # uvicorn shuts down on SIGTERM
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


_CHILD_CODE = "from cortexgraph.flows.local_server import _serve_child; _serve_child()"
_PR_SET_PDEATHSIG = 1


def _parent_death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to SIGTERM the child when this process dies, or None
    elsewhere. Only from the main thread: the kernel sends it when the creating *thread*
    ends, and the main thread ends with the process."""
    if not sys.platform.startswith("linux"):
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here, not after the fork
    except (OSError, AttributeError):
        return None

    def set_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)

    return set_signal


def _serve_child() -> None:
    """The server process: ``python -c _CHILD_CODE PARENT_PID server start ...``. A watchdog
    thread ends it when its parent is gone (reparented), then Prefect's CLI runs here."""
    import runpy

    parent = int(sys.argv[1])
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    sys.argv = ["prefect", *sys.argv[2:]]
    runpy.run_module("prefect", run_name="__main__", alter_sys=True)


def _watch_parent(parent: int, every: float = 0.5) -> None:
    while os.getppid() == parent:
        time.sleep(every)
    os.kill(os.getpid(), signal.SIGTERM)  # uvicorn shuts down on SIGTERM
    time.sleep(10)
    os._exit(1)


def _needed() -> bool:
    """True where Prefect would start its temporary server: no API URL is configured (by the
    environment, a profile or a test harness) and that mode is allowed."""
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    return not settings.api.url and settings.server.ephemeral.enabled


def start_local_server() -> None:
    """Start this process's server now if a flow run would need one (returns at once)."""
    global _server
    with _lock:
        if _server is None and not _gave_up and _needed():
            _server = PrefectServerProcess()
            atexit.register(_stop)
            _stop_on_termination()
            log.info("starting Prefect's server for this process's flow runs: %s", _server.api_url)


def _stop_on_termination() -> None:
    """Make SIGTERM and SIGHUP end this process through ``sys.exit``, so that the exit handlers
    stop the server: by default they end it at once, and the server would outlive it (a cron
    job's timeout, a closed terminal). Only where the process has not chosen a handler itself,
    and only from the main thread, the one place Python allows it."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if signum is not None and signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _exit_on_signal)


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _stop() -> None:
    global _server
    with _lock:
        server, _server = _server, None
    if server is not None:
        server.stop()


@contextmanager
def local_prefect_api() -> Iterator[str | None]:
    """Flow runs inside use this process's server (started here if need be): yields its API
    URL, or None where an API is configured or the server did not come up (then Prefect
    starts its temporary server, as it would without this)."""
    global _gave_up
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED,
        PREFECT_UI_URL,
        get_current_settings,
        temporary_settings,
    )

    start_local_server()
    with _lock:
        server = _server
    if server is None:
        yield None
        return
    timeout = get_current_settings().server.ephemeral.startup_timeout_seconds
    if not server.wait_ready(timeout):
        _gave_up = True
        log.warning(
            "Prefect's server (prefect server start) did not come up in %s s; using Prefect's "
            "temporary server instead. Its output: %s",
            timeout,
            server.output_tail() or "(none)",
        )
        _stop()
        yield None
        return
    # No UI is served (--no-ui), so no "View at" link to one. The server is this process's
    # child on this very Prefect install, so no client asks it for its version: the events
    # client's check (Prefect's once-per-process cache misses it, the API URL spelled without
    # the slash its HTTP client adds) built an SSL context and made a request inside the run.
    updates = {
        PREFECT_API_URL: server.api_url,
        PREFECT_UI_URL: "",
        PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED: False,
    }
    with temporary_settings(updates=updates):
        yield server.api_url


__all__ = ["PrefectServerProcess", "local_prefect_api", "start_local_server"]
