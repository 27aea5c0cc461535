"""The real `cortexgraph` CLI over a store, vault and issue repo in tmp_path (imported by name:
a module called ``conftest`` would collide with the other test folders').

A call runs ``cortexgraph.cli.main.main()`` in this process with exactly the environment a child
would get, stdin empty and stdout/stderr captured; a process costs ~2 s of imports (numpy,
pydantic-settings) on two cores, and the CLI tests made 46 calls. ``Cli(..., process=True)``
runs each call as ``python -m cortexgraph.cli.main`` instead: tests/cli/test_cli_process.py does
for every command the tests use, the demo test for ``demo``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from child_env import child_env
from child_env import run_in_process as in_process

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_760_000_000.0


class Cli:
    def __init__(self, tmp_path: Path, *, process: bool = False) -> None:
        self.storage = tmp_path / "store"
        self.vault = tmp_path / "vault"
        self.process = process
        # Where `edit` keeps the text of a refused edit: the test's folder, not the machine's /tmp.
        (tmp_path / "tmp").mkdir(parents=True, exist_ok=True)
        self.env = child_env(
            CORTEXGRAPH_STORAGE_PATH=str(self.storage),
            LTM_VAULT_PATH=str(self.vault),
            TMPDIR=str(tmp_path / "tmp"),
            CORTEXGRAPH_ENABLE_EMBEDDINGS="false",
            COLUMNS="200",
        )

    def __call__(self, *args: str, ok: bool = True, **env: str) -> subprocess.CompletedProcess:
        run = run_process if self.process else run_in_process
        done = run(list(args), {**self.env, **env})
        if ok:
            assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        return done

    def json(self, *args: str, **env: str) -> Any:
        return json.loads(self(*args, "--json", **env).stdout)

    def store(self) -> Any:
        from cortexgraph.storage import open_store

        return open_store(self.storage)


def run_process(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """``python -m cortexgraph.cli.main ARGS`` from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "cortexgraph.cli.main", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@contextmanager
def _sized_by_env() -> Iterator[None]:
    """The CLI's module-level rich Consoles size themselves from COLUMNS/LINES when created, in
    a process from the environment it was given; here they were created once, under whatever
    the test process had (xdist sets COLUMNS=80 in its workers). For the call they read the
    call's environment instead."""
    from rich.console import Console

    consoles = {
        id(value): value
        for name, module in list(sys.modules.items())
        if name.startswith("cortexgraph.cli")
        for value in vars(module).values()
        if isinstance(value, Console)
    }.values()
    sizes = [(c, c._width, c._height) for c in consoles]
    for console, _, _ in sizes:
        console._width = console._height = None
    try:
        yield
    finally:
        for console, width, height in sizes:
            console._width, console._height = width, height


def run_in_process(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """What ``run_process`` does, through ``main()`` here (tests/child_env.py), stdin empty."""
    from cortexgraph.cli.main import main

    with _sized_by_env():
        return in_process(main, ["cortexgraph", *args], env=env)
