"""The systems bench/peers_bench.py compares, each reached through its own MCP server over stdio.

A ``Peer`` says how to install the system (its own virtualenv under /tmp, made on first use,
never a dependency of ours), how to start its server on a fresh, empty home, how to save one
text and how to search. ``save`` returns the handle the server gave the new item (a memory id,
a note's permalink) and ``search`` the handles it ranked, so the bench maps them back to its own
keys the same way for every system.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters

BIN = Path(sys.executable).parent
BASIC_MEMORY_VENV = Path(os.environ.get("PEERS_BASIC_MEMORY_VENV", "/tmp/bmvenv"))
BASIC_MEMORY_VERSION = "0.24.1"
# basic-memory needs Python >= 3.12; pyenv keeps one on these machines.
PYTHON_312 = os.environ.get("PEERS_PYTHON_312", "/root/.pyenv/versions/3.12.1/bin/python3.12")
# Its pinned fastmcp asks for a certifi newer than the index's newest: override the pin.
CERTIFI_OVERRIDE = "certifi>=2026.10.18"


def payload(result: Any) -> Any:
    """A tool result's JSON: its structured content, else its one text part parsed."""
    sc = getattr(result, "structured_content", None)
    if sc is not None:
        return sc["result"] if isinstance(sc, dict) and set(sc) == {"result"} else sc
    texts = [c.text for c in result.content if getattr(c, "text", None) is not None]
    try:
        return json.loads(texts[0]) if len(texts) == 1 else texts
    except ValueError:
        return texts[0] if texts else None


def ids_in(obj: Any, keys: tuple[str, ...] = ("id", "memory_id")) -> list[str]:
    """Every string under one of ``keys``, depth first, first occurrence kept (as the shared
    locomo_mcp.py reads cortexgraph's replies)."""
    out: list[str] = []

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            out.extend(o[k] for k in keys if isinstance(o.get(k), str))
            for v in o.values():
                if isinstance(v, (dict, list)):
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(obj)
    return list(dict.fromkeys(out))


class ToolFailed(RuntimeError):
    """A tool call came back as an error result."""


def _checked(result: Any, tool: str) -> Any:
    body = payload(result)
    if getattr(result, "is_error", False):
        raise ToolFailed(f"{tool}: {str(body)[:200]}")
    return body


@dataclass(frozen=True)
class Peer:
    name: str
    prepare: Callable[[], str | None]  # installs on first use; a reason when it cannot run
    params: Callable[[Path], StdioServerParameters]  # the server on a fresh home folder
    save: Callable[[ClientSession, str, str], Awaitable[str]]  # (key, text) -> handle
    search: Callable[[ClientSession, str, int], Awaitable[list[str]]]  # (query, k) -> handles
    notes: Callable[[Path], list[str]]  # what a home's logs say it ran without


def _clean_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CORTEXGRAPH_", "LTM_", "BASIC_MEMORY_"))
    }
    env.update(HOME=str(home), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    return env


# --- cortexgraph, this repository and 1.2.1 ------------------------------------------------


def _cortexgraph_env(home: Path) -> dict[str, str]:
    env = _clean_env(home)
    (home / "vault").mkdir(parents=True, exist_ok=True)  # a named vault must exist
    env.update(
        CORTEXGRAPH_STORAGE_PATH=str(home / "store"),
        LTM_VAULT_PATH=str(home / "vault"),
        CORTEXGRAPH_LOG_LEVEL="WARNING",
    )
    return env


async def _cg_save(s: ClientSession, key: str, text: str) -> str:
    got = ids_in(_checked(await s.call_tool("save_memory", {"content": text}), "save_memory"))
    if not got:
        raise ToolFailed("save_memory returned no id")
    return got[0]


async def _cg_search(s: ClientSession, query: str, k: int) -> list[str]:
    res = await s.call_tool("search_memory", {"query": query, "top_k": k})
    return ids_in(_checked(res, "search_memory"))


def _ours_prepare() -> str | None:
    return None if (BIN / "cortexgraph-mcp").exists() else f"no cortexgraph-mcp in {BIN}"


def _ours_params(home: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(BIN / "cortexgraph-mcp"), args=[], env=_cortexgraph_env(home), cwd=str(home)
    )


def _reference_prepare() -> str | None:
    sys.path.insert(0, str(Path(__file__).parent))
    from _reference import REFERENCE_VENV, reference_python

    try:
        reference_python()
    except (OSError, subprocess.CalledProcessError) as e:
        return f"cannot install cortexgraph 1.2.1 in {REFERENCE_VENV}: {e}"
    return None


def _reference_params(home: Path) -> StdioServerParameters:
    from _reference import REFERENCE_VENV

    # 1.2.1's console script ``cortexgraph`` is its MCP server (cortexgraph.server:main_sync).
    return StdioServerParameters(
        command=str(REFERENCE_VENV / "bin" / "cortexgraph"),
        args=[],
        env=_cortexgraph_env(home),
        cwd=str(home),
    )


def _no_notes(home: Path) -> list[str]:
    return []


# --- basic-memory ----------------------------------------------------------------------------


def _bm_python() -> Path:
    return BASIC_MEMORY_VENV / "bin" / "python"


def _bm_prepare() -> str | None:
    py = _bm_python()
    probe = [str(py), "-I", "-c", "import basic_memory.mcp.server"]
    ok = lambda: (  # noqa: E731
        py.exists()
        and subprocess.run(probe, capture_output=True, cwd=tempfile.gettempdir()).returncode == 0
    )
    if ok():
        return None
    if not Path(PYTHON_312).exists():
        return f"basic-memory needs Python >= 3.12; none at {PYTHON_312}"
    print(
        f"setting up basic-memory {BASIC_MEMORY_VERSION} in {BASIC_MEMORY_VENV} ...",
        file=sys.stderr,
    )
    try:
        subprocess.run([PYTHON_312, "-m", "venv", str(BASIC_MEMORY_VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "uv"], check=True)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(CERTIFI_OVERRIDE + "\n")
        subprocess.run(
            [
                str(BASIC_MEMORY_VENV / "bin" / "uv"),
                "pip",
                "install",
                "-q",
                "--python",
                str(py),
                f"basic-memory=={BASIC_MEMORY_VERSION}",
                "--override",
                f.name,
            ],
            check=True,
        )
    except (OSError, subprocess.CalledProcessError) as e:
        return f"cannot install basic-memory: {e}"
    return None if ok() else "basic-memory installed but does not import"


def _bm_params(home: Path) -> StdioServerParameters:
    env = _clean_env(home)
    env.update(
        BASIC_MEMORY_CONFIG_DIR=str(home / ".basic-memory"),
        BASIC_MEMORY_HOME=str(home / "notes"),
        BASIC_MEMORY_AUTO_UPDATE="false",
    )
    return StdioServerParameters(
        command=str(BASIC_MEMORY_VENV / "bin" / "basic-memory"),
        args=["mcp"],  # stdio is its default transport
        env=env,
        cwd=str(home),
    )


async def _bm_save(s: ClientSession, key: str, text: str) -> str:
    # The title carries our key; the permalink the server derives from it is the handle.
    args = {"title": key, "content": text, "directory": "memories", "output_format": "json"}
    got = ids_in(_checked(await s.call_tool("write_note", args), "write_note"), ("permalink",))
    if not got:
        raise ToolFailed("write_note returned no permalink")
    return got[0]


async def _bm_search(s: ClientSession, query: str, k: int) -> list[str]:
    args = {"query": query, "page_size": k, "output_format": "json"}
    body = _checked(await s.call_tool("search_notes", args), "search_notes")
    results = body.get("results", []) if isinstance(body, dict) else []
    return [r["permalink"] for r in results if isinstance(r, dict) and r.get("permalink")]


def _bm_notes(home: Path) -> list[str]:
    log = home / ".basic-memory" / "basic-memory.log"
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    if "Semantic search disabled" in text:
        return [
            "semantic search off offline (no SQLite extension loading in this Python; "
            "its fastembed model would be downloaded): FTS5 keyword search only"
        ]
    return []


PEERS: list[Peer] = [
    Peer(
        "cortexgraph (this repo, defaults)",
        _ours_prepare,
        _ours_params,
        _cg_save,
        _cg_search,
        _no_notes,
    ),
    Peer(
        "cortexgraph 1.2.1 (defaults)",
        _reference_prepare,
        _reference_params,
        _cg_save,
        _cg_search,
        _no_notes,
    ),
    Peer(
        f"basic-memory {BASIC_MEMORY_VERSION} (defaults)",
        _bm_prepare,
        _bm_params,
        _bm_save,
        _bm_search,
        _bm_notes,
    ),
]


def fresh_home(root: Path, label: str) -> Path:
    home = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=root))
    return home


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
