"""The consolidation run's entity step, done after saves instead, in a child process.

A run reads the entities of every memory no finder has read yet (spaCy: ~1 s to import and
load, ~2.6 ms a text) before its first agent, on its critical path. Memories saved through this
server are read sooner: once saves have stopped for ``entity_reading_quiet_s`` (and at most once
every ``entity_reading_min_gap_s``), the server starts ``python -m
cortexgraph.mcp_server.entity_reading``, one at a time, which opens the store, runs the run's own
step (``RelationshipDiscovery.read_entities`` with the run's finder), writes the memories back
under the store's lock and exits. The next run finds them read and loads no spaCy.

Not in the server process: spaCy would add ~110 MB to a server held under 300 MB (issue 35). The
child is told the server's settings on stdin (what the server was started with, flags
included), runs niced, writes nothing to stdout (stdio's protocol channel) and logs to stderr.
Without spaCy installed no child starts: the rules are cheap and the run applies them. At
shutdown a running child is stopped (SIGTERM: it exits before or after its one append, and the
store's lock is released either way); what it had not written the next child or run reads.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cortexgraph.mcp_server.state import ServerState
    from cortexgraph.settings import Settings

log = logging.getLogger("cortexgraph.mcp")

SERVICE = "entity-reading"
MODULE = "cortexgraph.mcp_server.entity_reading"
STOP_WAIT_S = 10.0  # a stopped child's grace before it is killed


class EntityReading:
    """Starts the entity-reading child after saves: ``saved()`` after each save, ``close()``
    at shutdown."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._quiet = settings.entity_reading_quiet_s
        self._gap = settings.entity_reading_min_gap_s
        self._cond = threading.Condition()
        self._due: float | None = None  # the last save no child has been started after
        self._last_start = -math.inf
        self._child: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self.started = 0  # children started

    def saved(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._due = time.monotonic()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="cortexgraph-entities", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    @property
    def pending(self) -> bool:
        """A save's entities are not read yet: a child is due or running."""
        with self._cond:
            return self._due is not None or self._child is not None

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed:
                    wait = None
                    if self._due is not None:
                        start_at = max(self._due + self._quiet, self._last_start + self._gap)
                        wait = start_at - time.monotonic()
                        if wait <= 0:
                            break
                    self._cond.wait(wait)
                if self._closed:
                    return
                # Saves from now on are after this child listed the store, or read by it: either
                # way, a save from here on asks for another child.
                self._due = None
                self._last_start = time.monotonic()
                child = self._child = self._spawn()
            if child is None:
                continue
            code = child.wait()
            with self._cond:
                self._child = None
                if code != 0 and not self._closed:
                    log.warning("cortexgraph: entity reading exited with status %s", code)

    def _spawn(self) -> subprocess.Popen[bytes] | None:
        """Caller holds the condition. The settings travel on stdin, not argv (a token)."""
        try:
            child = subprocess.Popen(
                [sys.executable, "-m", MODULE],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,  # stdio's stdout is the protocol's
                env={**os.environ, "OMP_NUM_THREADS": "1"},
            )
        except OSError as exc:
            log.warning("cortexgraph: cannot start entity reading: %s", exc)
            return None
        assert child.stdin is not None
        try:
            with child.stdin:
                child.stdin.write(self._settings.model_dump_json(exclude_unset=True).encode())
        except OSError as exc:  # it died at once: its exit status is logged below
            log.warning("cortexgraph: entity reading did not take its settings: %s", exc)
        self.started += 1
        log.info("cortexgraph: reading saved memories' entities in process %d", child.pid)
        return child

    def close(self) -> None:
        """No child starts from now on; a running one is stopped and waited for."""
        with self._cond:
            self._closed = True
            child = self._child
            self._cond.notify_all()
        if child is not None and child.poll() is None:
            child.terminate()
            try:
                child.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        if self._thread is not None:
            self._thread.join(STOP_WAIT_S)


def spacy_installed() -> bool:
    """spaCy is importable (the ``full`` extra), found without importing it."""
    return importlib.util.find_spec("spacy") is not None


def _reading(state: ServerState) -> EntityReading | None:
    """The server's entity reading, made on first use (None when it is off or without spaCy)."""
    settings = state.settings
    if not settings.entity_reading_after_saves:
        return None
    return state.service(SERVICE, lambda: EntityReading(settings) if spacy_installed() else None)


def read_entities_soon(state: ServerState) -> None:
    """After a save through the server: its entities are read once saves stop (nothing when
    CORTEXGRAPH_ENTITY_READING_AFTER_SAVES is false or spaCy is not installed)."""
    reading = _reading(state)
    if reading is not None:
        reading.saved()


def entities_pending(state: ServerState) -> bool:
    """Memories saved through this server whose entities no child has read yet (a child is
    due or running): ``cortexgraph://stats`` says so, for a benchmark's run to wait."""
    reading = _reading(state)
    return reading is not None and reading.pending


def stop_entity_reading(state: ServerState) -> None:
    """At shutdown: no child starts again, a running one is stopped."""
    reading = state.service(SERVICE, lambda: None)
    if reading is not None:
        reading.close()


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # finally blocks run: the store's locks are released


def main() -> int:
    """The child: the server's settings on stdin; reads, writes back, exits."""
    from cortexgraph.process_env import prepare_process

    signal.signal(signal.SIGTERM, _stop)
    prepare_process()
    with contextlib.suppress(OSError, AttributeError):  # no os.nice on Windows
        os.nice(10)  # behind the server's requests
    from cortexgraph.activation.entity_batch import batch_entity_finder
    from cortexgraph.agents.pipeline import pipeline_config
    from cortexgraph.agents.relationship_discovery import RelationshipDiscovery
    from cortexgraph.settings import Settings
    from cortexgraph.storage.errors import CortexGraphError
    from cortexgraph.user_store import open_user_store

    settings = Settings.model_validate_json(sys.stdin.buffer.read())
    logging.basicConfig(
        stream=sys.stderr,
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    started = time.perf_counter()
    try:
        store = open_user_store(settings)
        config = pipeline_config(settings.decay_config(), **settings.pipeline_options())
        agent = RelationshipDiscovery(
            store, config.relations, entity_finder=batch_entity_finder(settings.spacy_model)
        )
        read, method = agent.read_entities()  # the run's own step
    except CortexGraphError as exc:
        log.warning("cortexgraph: entity reading failed: %s", exc)
        return 1
    log.info(
        "cortexgraph: entities read in %d memories (%s) in %.1f s",
        read,
        method,
        time.perf_counter() - started,
    )
    return 0


__all__ = [
    "EntityReading",
    "entities_pending",
    "read_entities_soon",
    "spacy_installed",
    "stop_entity_reading",
]

if __name__ == "__main__":
    raise SystemExit(main())
