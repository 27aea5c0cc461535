"""What the memory, undo and transfer commands share: options, settings, opening the store,
and turning typed errors into a one-line message with exit code 2 (1 for "not found")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from cortexgraph.settings import Settings, load_settings
from cortexgraph.storage.errors import CortexGraphError, NotFoundError

out = Console(soft_wrap=True)
err = Console(stderr=True)

StorageOpt = Annotated[
    Path | None,
    typer.Option("--storage-path", help="STM directory (default: CORTEXGRAPH_STORAGE_PATH)."),
]
VaultOpt = Annotated[
    Path | None, typer.Option("--vault", help="Obsidian vault (default: LTM_VAULT_PATH).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="machine-readable output")]
MemoryIdArg = Annotated[str, typer.Argument(help="memory id")]


def settings_for(storage_path: Path | None = None, vault: Path | None = None) -> Settings:
    return load_settings(storage_path=storage_path, ltm_vault_path=vault)


def open_cli_store(settings: Settings, *, embeddings: bool = False) -> Any:
    """The JSONL store; with ``embeddings``, searched with MiniLM when it is installed."""
    from cortexgraph.user_store import open_user_store

    dense = None
    if embeddings and settings.enable_embeddings:
        from cortexgraph.storage.embeddings import MatrixDenseIndex, default_cache

        cache = default_cache(settings.storage_path)
        dense = MatrixDenseIndex(cache) if cache is not None else None
    return open_user_store(settings, dense=dense)


def cli_store(
    storage_path: Path | None = None, vault: Path | None = None, *, embeddings: bool = False
) -> tuple[Settings, Any]:
    """The settings with --storage-path / --vault applied, and the store they name."""
    settings = settings_for(storage_path, vault)
    return settings, open_cli_store(settings, embeddings=embeddings)


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
    "cli_errors",
    "cli_store",
    "err",
    "open_cli_store",
    "out",
    "print_json",
    "read_tracker",
    "report_done",
    "settings_for",
]
