"""What every test that talks to the MCP server needs: a clean environment or settings
pointed at a temporary folder, the payload of a tool result, and the bytes of a folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from child_env import child_env

from cortexgraph.settings import Settings

# The first JSON-RPC message of a raw MCP session (tests that speak the wire protocol by hand).
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


def server_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    (tmp_path / "vault").mkdir(parents=True, exist_ok=True)  # a named vault must exist
    defaults = {
        "CORTEXGRAPH_STORAGE_PATH": str(tmp_path / "stm"),
        "LTM_VAULT_PATH": str(tmp_path / "vault"),
        "CORTEXGRAPH_BEADS_REPO": str(tmp_path / "beads"),
        "CORTEXGRAPH_ENABLE_EMBEDDINGS": "false",
        # no child reading entities after saves, unless a test is about it (entity_reading)
        "CORTEXGRAPH_ENTITY_READING_AFTER_SAVES": "false",
        "CORTEXGRAPH_LOG_LEVEL": "WARNING",
        "OMP_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    return child_env(**(defaults | extra))


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Settings over ``tmp_path``; its ``vault`` folder is created (a named vault must exist)
    unless the caller names the vault itself."""
    if "ltm_vault_path" not in overrides:
        (tmp_path / "vault").mkdir(parents=True, exist_ok=True)
    values: dict[str, Any] = {
        "storage_path": tmp_path / "stm",
        "ltm_vault_path": tmp_path / "vault",
        "beads_repo": tmp_path / "beads",
        "enable_embeddings": False,
        "log_level": "WARNING",
    }
    values.update(overrides)
    return Settings(**values)


def folder_bytes(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` (the lock file aside), to prove a call changed nothing."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def error_text(result: Any) -> str:
    assert result.is_error, f"expected an error result, got {result.content[0].text[:300]}"
    return result.content[0].text
