"""The user's data as every shell opens it: the store, its issue tracker, its record of runs.

The CLIs, the Prefect flow, 1.x's Python API and the MCP server all need the same answers
(which directory, which ``.beads/`` repository, where the last consolidation run is written),
and none of them may import another, so the answers live here, below all of them:

- ``open_user_store``: the JSONL store, with records an older version's behaviour monitor left
  in it moved to the monitor's own ledger first, so no command ever shows them;
- ``read_store_copy``: what every dry run reads instead: the records in memory, not a byte
  written (no lock file, no quarantine), the unreadable lines listed;
- ``tracker_location`` / ``open_configured_tracker`` / ``open_issue_tracker``: the beads
  tracker (``--repo``, else ``CORTEXGRAPH_BEADS_REPO``, else ``.beads/`` in the storage
  directory's own repository), or the in-memory fallback said out loud;
- ``record_run`` / ``last_run``: ``<storage>/consolidation-runs.jsonl``, one line per live
  consolidation run (``cortexgraph-consolidate``, the demo, 1.x's ``Scheduler``), read by
  ``status``, ``--scheduled`` and ``run_scheduled``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from cortexgraph.storage import InMemoryStore, JSONLStore, open_store
from cortexgraph.storage.errors import CortexGraphError, InvalidInputError

if TYPE_CHECKING:  # the tracker (GitPython) loads only when asked for
    from cortexgraph.settings import Settings
    from cortexgraph.storage.beads import BeadsTracker
    from cortexgraph.storage.beads.memory_tracker import InMemoryIssueTracker

log = logging.getLogger(__name__)

RUNS_FILE = "consolidation-runs.jsonl"


class RunReport(Protocol):
    """What the run record needs of a run (agents.pipeline.PipelineReport)."""

    def summary_json(self) -> dict[str, Any]: ...


def open_user_store(settings: Settings, dense: Any = None) -> JSONLStore:
    """The user's store; records the behaviour monitor left there by an older version are
    moved to its own ledger first, so no command ever shows them."""
    from cortexgraph.activation.monitor.ledger_store import isolate_monitor_records

    store = open_store(settings.storage_path, settings.store_config(), dense=dense)
    moved = isolate_monitor_records(store, settings.storage_path)
    if moved.moved:
        log.info(
            "cortexgraph: moved %d behaviour-monitor records out of the store into %s",
            moved.memories_moved,
            moved.ledger,
        )
    return store


def read_store_copy(settings: Settings) -> InMemoryStore:
    """The store's records read straight from its files into memory, writing nothing: what a
    dry run works on. Its ``unreadable`` lists the lines a live open would quarantine."""
    path = settings.storage_path
    if not path.is_dir():
        raise InvalidInputError(
            f"no store at {path}: nothing to preview (run once without --dry-run)"
        )
    return InMemoryStore.from_files(path, settings.store_config())


def tracker_location(settings: Settings, repo: Path | None = None) -> tuple[Path, bool]:
    """(where .beads/ goes, whether a repository above it may be used)."""
    chosen = repo or settings.beads_repo
    if chosen is not None:
        return Path(chosen).expanduser(), True
    return settings.storage_path, False


def open_configured_tracker(
    settings: Settings, repo: Path | None = None, *, init: bool = True
) -> BeadsTracker:
    """The beads tracker where the settings (or ``repo``) say; ``init=False`` never creates
    a git repository."""
    from cortexgraph.storage.beads.opening import open_tracker

    location, search_parents = tracker_location(settings, repo)
    return open_tracker(location, settings.beads_prefix, search_parents=search_parents, init=init)


def open_issue_tracker(
    settings: Settings, repo: Path | None = None
) -> tuple[BeadsTracker | InMemoryIssueTracker, str]:
    """The beads tracker, or an in-memory one when tracking is off or the repo is unusable.

    The second value says which, in words, for the flow's log and summary. The in-memory
    tracker's module loads only when it is the answer.
    """
    if not settings.beads_enabled:
        return _in_memory_tracker(), "issue tracking disabled: work passed between agents in memory"
    try:
        tracker = open_configured_tracker(settings, repo)
    except CortexGraphError as e:
        log.warning("beads tracker unavailable, tracking in memory: %s", e)
        return _in_memory_tracker(), f"beads repository unusable ({e}); tracking in memory"
    return tracker, f"issues tracked in {tracker.path}"


def _in_memory_tracker() -> InMemoryIssueTracker:
    from cortexgraph.storage.beads.memory_tracker import InMemoryIssueTracker

    return InMemoryIssueTracker()


def record_run(storage: Path, report: RunReport, finished: float) -> None:
    """Append a live run's summary to ``<storage>/consolidation-runs.jsonl``."""
    data = report.summary_json()
    record = {
        "finished_at": finished,
        "dry_run": False,
        "agents": data["agents"],
        "total_seconds": data["total_seconds"],
        "seconds": data["seconds"],
        "summaries": data["summaries"],
        "notes": data["notes"],
    }
    with (storage / RUNS_FILE).open("a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def recent_runs(storage: Path, limit: int) -> list[dict[str, Any]]:
    """The last ``limit`` readable lines of ``consolidation-runs.jsonl``, newest first (a line
    cut off by a crash is skipped)."""
    try:
        lines = (storage / RUNS_FILE).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    found: list[dict[str, Any]] = []
    for line in reversed(lines):
        if len(found) >= limit:
            break
        try:
            run = json.loads(line)
        except ValueError:
            continue
        if isinstance(run, dict):
            found.append(run)
    return found


def last_run(storage: Path) -> dict[str, Any] | None:
    """The last readable line of ``consolidation-runs.jsonl``, or None before the first run."""
    runs = recent_runs(storage, 1)
    return runs[0] if runs else None


__all__ = [
    "RUNS_FILE",
    "last_run",
    "open_configured_tracker",
    "open_issue_tracker",
    "open_user_store",
    "recent_runs",
    "record_run",
    "tracker_location",
]
