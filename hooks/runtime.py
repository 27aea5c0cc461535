"""Where a hook finds things: the store, the project, its settings and its own state files.

This is an edge, so it reads the configuration (CORTEXGRAPH_* variables, Claude Code's
``CLAUDE_PROJECT_DIR``); nothing below it reads the environment. Importing
``cortexgraph.settings`` (pydantic-settings) costs ~100 ms, a third of the per-prompt budget, so
when no CORTEXGRAPH_* variable other than the storage path is set the defaults are used
directly (and 1.x's unprefixed ``LTM_VAULT_PATH``); tests/hooks check that these equal
``Settings()``'s. Any other such variable means
the full ``Settings`` is read, so a configured decay model is never ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortexgraph.hooks.contract import HookInput
from cortexgraph.hooks.project_settings import PluginSettings, load_project_settings
from cortexgraph.storage.config import LTM_WEIGHT, StoreConfig

_SESSION_RE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True, slots=True)
class HookRuntime:
    storage_path: Path
    store_config: StoreConfig
    project_dir: Path | None
    state_dir: Path
    plugin: PluginSettings
    vault_path: Path | None = None  # the LTM vault; None: ``vault/`` beside the STM directory
    ltm_weight: float = LTM_WEIGHT  # search_unified's weight of long-term memory

    @property
    def vault(self) -> Path:
        return self.vault_path or self.storage_path.parent / "vault"

    @property
    def project_name(self) -> str:
        return self.project_dir.name if self.project_dir else ""

    def session_state_path(self, session_id: str, kind: str) -> Path:
        safe = _SESSION_RE.sub("_", session_id)[:80] or "no-session"
        return self.state_dir / f"{safe}.{kind}.json"

    def read_state(self, session_id: str, kind: str) -> dict[str, Any]:
        try:
            data = json.loads(self.session_state_path(session_id, kind).read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write_state(self, session_id: str, kind: str, data: dict[str, Any]) -> None:
        path = self.session_state_path(session_id, kind)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        tmp.replace(path)


DEFAULT_STORAGE_PATH = "~/.config/cortexgraph/jsonl"  # = Settings.storage_path's default
_HOOK_ONLY = {"CORTEXGRAPH_HOOK_STATE_DIR"}
_FAST_OK = {"CORTEXGRAPH_STORAGE_PATH", "LTM_VAULT_PATH", "LTM_PROMOTED_FOLDER", *_HOOK_ONLY}


@dataclass(frozen=True, slots=True)
class StoreLocation:
    """Where the rest of cortexgraph keeps memories, and how it reads them."""

    storage_path: Path
    store_config: StoreConfig
    vault_path: Path
    ltm_weight: float


def store_location(environ: Mapping[str, str]) -> StoreLocation:
    """The storage directory, store configuration, vault and LTM weight the rest of
    cortexgraph would use."""
    # 1.x's LTM_* names too: a misspelt one takes the slow path, which names it on stderr
    ours = {k.upper() for k in environ if k.upper().startswith(("CORTEXGRAPH_", "LTM_"))}
    if ours <= _FAST_OK:
        upper = {k.upper(): v for k, v in environ.items()}
        storage = Path(upper.get("CORTEXGRAPH_STORAGE_PATH") or DEFAULT_STORAGE_PATH).expanduser()
        # 1.x's unprefixed name (Settings.ltm_vault_path reads it too)
        vault = upper.get("LTM_VAULT_PATH")
        vault_path = Path(vault).expanduser() if vault else storage.parent / "vault"
        return StoreLocation(storage, StoreConfig(), vault_path, LTM_WEIGHT)
    from cortexgraph.settings import load_settings
    from cortexgraph.settings_env import warn_unknown_env

    warn_unknown_env(environ)  # only here: the variables the fast path knows are all known
    settings = load_settings()  # a bad value: SettingsError, one line naming the variable
    return StoreLocation(
        settings.storage_path,
        settings.store_config(),
        settings.vault_path,
        settings.search_ltm_weight,
    )


def load_runtime(inp: HookInput, environ: Mapping[str, str] | None = None) -> HookRuntime:
    env = os.environ if environ is None else environ
    where = store_location(env)
    storage_path = where.storage_path
    project = env.get("CLAUDE_PROJECT_DIR") or inp.cwd
    project_dir = Path(project) if project else None
    state = env.get("CORTEXGRAPH_HOOK_STATE_DIR")
    state_dir = Path(state) if state else storage_path.parent / "claude-code-hooks"
    return HookRuntime(
        storage_path=storage_path,
        store_config=where.store_config,
        project_dir=project_dir,
        state_dir=state_dir,
        plugin=load_project_settings(project_dir, sys.stderr, env),
        vault_path=where.vault_path,
        ltm_weight=where.ltm_weight,
    )


def fingerprint(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


__all__ = [
    "DEFAULT_STORAGE_PATH",
    "HookRuntime",
    "StoreLocation",
    "fingerprint",
    "load_runtime",
    "store_location",
]
