"""Where a vault's files lie: inside the vault or not, as the vault names them, which are notes.

Names themselves are given in ``vault_sync.note_names``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from cortexgraph.vault_sync.errors import UnsafePathError

SKIPPED_DIRS = frozenset({".obsidian", ".trash", ".cortexgraph", ".git"})


def ensure_inside(vault: Path, path: Path) -> Path:
    """``path`` resolved, if it lies inside ``vault`` (symlinks followed); else UnsafePathError."""
    root = _resolved_root(vault)
    full = (root / path).resolve()
    if full != root and root not in full.parents:
        raise UnsafePathError(f"{path} resolves outside the vault {root}")
    return full


def relative_posix(vault: Path, path: Path) -> str:
    """Vault-relative path with forward slashes (what Obsidian and the index store)."""
    return path.resolve().relative_to(_resolved_root(vault)).as_posix()


def iter_markdown_files(vault: Path) -> Iterator[Path]:
    """Every .md file, skipping hidden folders (.obsidian, .trash, .cortexgraph) and temp files."""
    stack = [vault]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name.startswith(".") or entry.name in SKIPPED_DIRS:
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            elif entry.name.lower().endswith(".md") and entry.is_file():
                yield Path(entry.path)


@lru_cache(maxsize=64)
def _absolute_root(vault: Path) -> Path:
    return vault.resolve()


def _resolved_root(vault: Path) -> Path:
    """``vault.resolve()``, once per process for an absolute root. Promoting one note resolved
    its vault's root 4-8 times (the note, each link, the ledger's path): ~8% of a re-promotion
    (bench/vault_promote_bench.py). The sink and the index pin their roots when they start
    anyway, so a root moved under a running process is followed by neither. A relative root
    depends on the working directory: resolved each time."""
    return _absolute_root(vault) if vault.is_absolute() else vault.resolve()


__all__ = ["SKIPPED_DIRS", "ensure_inside", "iter_markdown_files", "relative_posix"]
