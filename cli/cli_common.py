"""What the memory, undo and transfer commands share: options, settings, opening the store,
and turning typed errors into a one-line message with exit code 2 (1 for "not found")."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from cortexgraph.settings import Settings, load_settings
from cortexgraph.storage.errors import CortexGraphError, InvalidInputError, NotFoundError

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)  # an error is one line, however narrow the terminal

StorageOpt = Annotated[
    Path | None,
    typer.Option("--storage-path", help="STM directory (default: CORTEXGRAPH_STORAGE_PATH)."),
]
STORAGE_ENV = "CORTEXGRAPH_STORAGE_PATH"
VAULT_ENVS = ("LTM_VAULT_PATH", "CORTEXGRAPH_LTM_VAULT_PATH")
# Where `cortexgraph demo` puts its store by default (demo_cmd's --dir), relative to the
# folder it ran in: a read command on an empty default store points there.
DEMO_STORE = Path("demo") / "store"
VaultOpt = Annotated[
    Path | None, typer.Option("--vault", help="Obsidian vault (default: LTM_VAULT_PATH).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="machine-readable output")]
MemoryIdArg = Annotated[str, typer.Argument(help="memory id")]


def settings_for(storage_path: Path | None = None, vault: Path | None = None) -> Settings:
    return load_settings(storage_path=storage_path, ltm_vault_path=vault)


def dense_index(settings: Settings) -> Any:
    """The MiniLM index over the store's vector cache (the model loads on its first query);
    None with embeddings off or the model not installed."""
    if not settings.enable_embeddings:
        return None
    from cortexgraph.storage.embeddings import MatrixDenseIndex, default_cache

    cache = default_cache(settings.storage_path)
    return MatrixDenseIndex(cache) if cache is not None else None


def open_cli_store(settings: Settings, *, embeddings: bool = False) -> Any:
    """The JSONL store; with ``embeddings``, searched with MiniLM when it is installed."""
    from cortexgraph.user_store import open_user_store

    return open_user_store(settings, dense=dense_index(settings) if embeddings else None)


def cli_store(
    storage_path: Path | None = None, vault: Path | None = None, *, embeddings: bool = False
) -> tuple[Settings, Any]:
    """The settings with --storage-path / --vault applied, and the existing store they name
    (every caller reads or changes memories already there): a store named by the option or
    CORTEXGRAPH_STORAGE_PATH that does not exist is refused, never created
    (``existing_store_path``); an empty default store is said to be empty, in one line that
    points at the demo's when there is one (``hint_if_empty``)."""
    settings = settings_for(storage_path, vault)
    existing_store_path(settings, storage_path)
    store = open_cli_store(settings, embeddings=embeddings)
    hint_if_empty(settings, storage_path, len(store))
    return settings, store


def preview_store(settings: Settings, storage_path: Path | None) -> Any:
    """A dry run's store: the records read into memory (``read_store_copy``), not a byte
    written; lines a live open would quarantine are named on stderr, one line per file."""
    from cortexgraph.user_store import read_store_copy

    existing_store_path(settings, storage_path)
    store = read_store_copy(settings)
    for lines in store.unreadable:
        err.print(f"dry run: {escape(lines.describe())}", highlight=False)
    return store


def store_is_explicit(storage_path: Path | None) -> bool:
    """Whether the user named the store (the option or the variable), not the default."""
    return storage_path is not None or bool(os.environ.get(STORAGE_ENV))


def existing_store_path(settings: Settings, storage_path: Path | None) -> Path:
    """The store's folder; InvalidInputError (exit 2) when the user named one that does not
    exist: a mistyped path is never created by a command that reads."""
    path = settings.storage_path
    if store_is_explicit(storage_path) and not path.is_dir():
        how = "--storage-path" if storage_path is not None else STORAGE_ENV
        if path.exists():
            raise InvalidInputError(
                f"{path} ({how}) is a file, not a directory: name the store's folder"
            )
        raise InvalidInputError(
            f"no store at {path} ({how}); nothing was created: check the path"
            + (", or run `cortexgraph demo` first" if path.parts[-2:] == DEMO_STORE.parts else "")
        )
    return path


def hint_if_empty(settings: Settings, storage_path: Path | None, count: int) -> None:
    """One line on stderr when the default store holds no memory: which store is empty, and
    how to point at the demo's when `cortexgraph demo` ran in this folder."""
    if count or store_is_explicit(storage_path):
        return
    demo = DEMO_STORE
    if (demo / "memories.jsonl").is_file() and demo.resolve() != settings.storage_path.resolve():
        err.print(
            f"the store {settings.storage_path} is empty; the demo's memories are in {demo}: "
            f"add --storage-path {demo} (or export {STORAGE_ENV}={demo})",
            highlight=False,
        )
    else:
        err.print(
            f"the store {settings.storage_path} is empty (another one: --storage-path PATH "
            f"or {STORAGE_ENV})",
            highlight=False,
        )


def require_vault(settings: Settings, vault: Path | None) -> Path:
    """The vault's folder; InvalidInputError (exit 2) when it does not exist, naming where it
    was looked for and what to do: check a path the user named (or create its folder), name
    one when the default is missing."""
    path = settings.vault_path
    if not path.is_dir():
        if settings.vault_may_be_created:
            raise InvalidInputError(
                f"no vault at {path} (the default); name one with --vault PATH or {VAULT_ENVS[0]}"
            )
        how = "--vault" if vault is not None else _vault_variable()
        raise InvalidInputError(
            f"no vault at {path} ({how}); nothing was created: check the path, or create "
            "the folder first to start a new vault"
        )
    return path


def check_named_vault(settings: Settings, vault: Path | None) -> None:
    """A vault the user named (--vault, LTM_VAULT_PATH) must exist (``require_vault``): a
    mistyped path is refused, never created nor read as an empty vault. The default one
    (beside the store) may be missing: its first note creates it."""
    if not settings.vault_may_be_created:
        require_vault(settings, vault)


def writable_vault(settings: Settings, vault: Path | None) -> Path:
    """The vault a command writes notes to (``check_named_vault``)."""
    check_named_vault(settings, vault)
    return settings.vault_path


def _vault_variable() -> str:
    return next((name for name in VAULT_ENVS if os.environ.get(name)), VAULT_ENVS[0])


def read_tracker(settings: Settings) -> Any:
    """The beads tracker if it exists (never created here), else None."""
    from cortexgraph.user_store import open_configured_tracker

    if not settings.beads_enabled:
        return None
    try:
        return open_configured_tracker(settings, init=False)
    except CortexGraphError:
        return None


def print_json(data: Any) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def report_done(result: dict[str, Any], message: str, as_json: bool) -> None:
    """A command's success: ``{"success": true, **result}`` with --json, else "✓ message"."""
    if as_json:
        print_json({"success": True, **result})
    else:
        out.print(f"[green]✓[/] {message}", highlight=False)


@contextmanager
def cli_errors() -> Iterator[None]:
    """Typed errors become one line on stderr: exit 1 for an unknown id, 2 for the rest."""
    try:
        yield
    except NotFoundError as exc:
        err.print(f"[red]not found:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from exc
    except CortexGraphError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc


__all__ = [
    "JsonOpt",
    "MemoryIdArg",
    "StorageOpt",
    "VaultOpt",
    "check_named_vault",
    "cli_errors",
    "cli_store",
    "dense_index",
    "err",
    "existing_store_path",
    "hint_if_empty",
    "open_cli_store",
    "out",
    "preview_store",
    "print_json",
    "read_tracker",
    "report_done",
    "require_vault",
    "settings_for",
    "store_is_explicit",
    "writable_vault",
]
