"""``cortexgraph-maintenance``: look after a JSONL store (``stats``, ``compact``).

    cortexgraph-maintenance stats   [--storage-path DIR] [--json]
    cortexgraph-maintenance compact [--storage-path DIR] [--json]

The path defaults to ``CORTEXGRAPH_STORAGE_PATH`` (settings are read here, at the edge).
Typed storage errors become a one-line message and exit code 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from storage import CortexGraphError, open_store

app = typer.Typer(
    help="Maintain a cortexgraph short-term memory store.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

PathOption = Annotated[
    Path | None,
    typer.Option("--storage-path", help="STM directory (default: CORTEXGRAPH_STORAGE_PATH)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def _open(storage_path: Path | None):
    from cortexgraph.settings import load_settings

    settings = load_settings(storage_path=storage_path)
    try:
        return open_store(settings.storage_path, config=settings.store_config())
    except CortexGraphError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


def _print(data: dict, as_json: bool, title: str) -> None:
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in data.items():
        table.add_row(key, f"{value:,}" if isinstance(value, int) else str(value))
    Console().print(table)


@app.command()
def stats(storage_path: PathOption = None, as_json: JsonOption = False) -> None:
    """Counts by status, relations, decay bands, quarantined lines, file size."""
    store = _open(storage_path)
    data = {"storage_path": str(store.path), **store.stats().to_json()}
    _print(data, as_json, "cortexgraph store")


@app.command()
def compact(storage_path: PathOption = None, as_json: JsonOption = False) -> None:
    """Rewrite the JSONL files with one line per live record (safe while others write)."""
    store = _open(storage_path)
    try:
        report = store.compact()
    except CortexGraphError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    data = {
        "storage_path": str(store.path),
        "memories_kept": report.memories_kept,
        "relations_kept": report.relations_kept,
        "lines_before": report.lines_before,
        "lines_after": report.lines_after,
        "bytes_before": report.bytes_before,
        "bytes_after": report.bytes_after,
    }
    _print(data, as_json, "compaction")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
