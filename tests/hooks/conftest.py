"""Drive the hooks as Claude Code does: JSON on stdin, stdout parsed.

``run_hook`` calls the hooks' ``main()`` in this process with exactly the environment and
stdin a child would get (tests/child_env.py): a hook process costs ~0.2 s of CPU on two cores
and these tests made 80 calls. ``run_hook(..., process=True)`` runs
``python -m cortexgraph.hooks EVENT`` instead, as Claude Code does: the first test of each
event, the unknown event and the hostile input (docs/reliability.md cites them) do.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from child_env import child_env, hook_in_process, hook_process
from hooks_helpers import AUTH_DECISION, ROOT, HookRun

from cortexgraph.storage import open_store


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder with a short path: a socket's path must stay under ~100 bytes, and pytest's
    tmp_path under xdist is longer than that."""
    folder = Path(tempfile.mkdtemp(prefix="cg"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def hook_env(tmp_path: Path) -> dict[str, str]:
    return child_env(
        CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "store"),
        CORTEXGRAPH_HOOK_STATE_DIR=str(tmp_path / "state"),
        HOME=str(tmp_path / "home"),
        PYTHONPATH=str(ROOT),
        OMP_NUM_THREADS="1",
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "ledgerly"
    p.mkdir()
    return p


@pytest.fixture
def run_hook(hook_env: dict[str, str], project: Path):
    def run(
        event: str, payload: dict[str, Any] | str, *, process: bool = False, **env: str
    ) -> HookRun:
        body = (
            payload
            if isinstance(payload, str)
            else json.dumps(
                {"session_id": "sess-1", "transcript_path": "", "cwd": str(project), **payload}
            )
        )
        call = hook_process if process else hook_in_process
        proc = call(event, body, {**hook_env, **env})
        return HookRun(proc.returncode, proc.stdout, proc.stderr)

    return run


@pytest.fixture
def store(tmp_path: Path):
    return open_store(tmp_path / "store")


@pytest.fixture
def seeded(store, tmp_path: Path):
    """A small store: one authentication decision among unrelated memories.

    Saved relative to the real clock, because the hook subprocesses read it.
    """
    now = int(time.time())
    ids = {
        "auth": store.save(AUTH_DECISION, tags=["decision", "auth"], now=now - 86400).id,
        "ledger": store.save(
            "Ledgerly stores money as integer cents in PostgreSQL.",
            tags=["ledgerly", "decision"],
            now=now - 3 * 86400,
        ).id,
        "tabs": store.save(
            "The user prefers tabs over spaces in Go code.",
            tags=["preference"],
            now=now - 2 * 86400,
        ).id,
        "lunch": store.save("Team lunch is on Fridays at the noodle place.", now=now).id,
        "deploy": store.save(
            "Deploys go out on Tuesdays through the staging pipeline.",
            tags=["ledgerly"],
            now=now - 5 * 86400,
        ).id,
    }
    return ids
