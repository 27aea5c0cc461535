"""The real `cortexgraph` CLI in a subprocess, over a store, vault and issue repo in tmp_path
(imported by name: a module called ``conftest`` would collide with the other test folders')."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from child_env import child_env

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_760_000_000.0


class Cli:
    def __init__(self, tmp_path: Path) -> None:
        self.storage = tmp_path / "store"
        self.vault = tmp_path / "vault"
        self.env = child_env(
            CORTEXGRAPH_STORAGE_PATH=str(self.storage),
            LTM_VAULT_PATH=str(self.vault),
            CORTEXGRAPH_ENABLE_EMBEDDINGS="false",
            COLUMNS="200",
        )

    def __call__(self, *args: str, ok: bool = True, **env: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [sys.executable, "-m", "cortexgraph.cli.main", *args],
            cwd=ROOT,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        if ok:
            assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        return done

    def json(self, *args: str, **env: str) -> Any:
        return json.loads(self(*args, "--json", **env).stdout)

    def store(self) -> Any:
        from cortexgraph.storage import open_store

        return open_store(self.storage)
