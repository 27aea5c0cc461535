"""``cortexgraph-maintenance``: look after a JSONL store (``stats``, ``compact``).

    cortexgraph-maintenance [--storage-path DIR] stats   [--json]     # 1.x's order
    cortexgraph-maintenance stats   [--storage-path DIR] [--json]
    cortexgraph-maintenance compact [--storage-path DIR] [--json]
    cortexgraph-maintenance repair-context [--storage-path DIR] [--dry-run] [--json]

The path defaults to ``CORTEXGRAPH_STORAGE_PATH`` (settings are read here, at the edge); it may
come before the command (as 1.x documents) or after it. ``stats`` ends with the compaction hint:
live records against lines on disk, and what ``compact`` would reclaim. ``repair-context`` moves
the previous memory's text out of ``context`` where older versions put it (it stays a ranking
signal: ``storage.recent_saves.repair_neighbour_contexts``) and says how many it moved.
Typed storage errors become a one-line message and exit code 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from cortexgraph.storage import CortexGraphError
from cortexgraph.user_store import open_user_store

app = typer.Typer(
    help="Maintain a cortexgraph short-term memory store.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
_GLOBAL: dict[str, Path | None] = {"storage_path": None}

PathOption = Annotated[
    Path | None,
    typer.Option("--storage-path", help="STM directory (default: CORTEXGRAPH_STORAGE_PATH)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


@app.callback()
def _options(
    storage_path: Annotated[
        Path | None,
        typer.Option("--storage-path", help="STM directory (default: CORTEXGRAPH_STORAGE_PATH)."),
    ] = None,
) -> None:
    _GLOBAL["storage_path"] = storage_path


def _open(storage_path: Path | None, *, dry_run: bool = False):
    """The store a command works on (a dry run's: read into memory, nothing written); a store
    the user named that does not exist is refused, never created."""
    from cortexgraph.cli.cli_common import existing_store_path, preview_store
    from cortexgraph.settings import load_settings

    named = storage_path or _GLOBAL["storage_path"]
    settings = load_settings(storage_path=named)
    try:
        if dry_run:
            return preview_store(settings, named)
        existing_store_path(settings, named)
        return open_user_store(settings)
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
    data = {"storage_path": str(store.path), **store.stats().to_json(), **compaction_hint(store)}
    _print(data, as_json, "cortexgraph store")


def compaction_hint(store) -> dict:  # a JSONLStore
    """Live records against lines on disk, and what ``compact`` would reclaim (computed the way
    compact writes: one JSON line per live record)."""
    from cortexgraph.storage.jsonl_lines import count_lines, record_lines

    files = [
        store.path / store.config.memories_filename,
        store.path / store.config.relations_filename,
    ]
    lines = sum(count_lines(f) for f in files)
    on_disk = sum(f.stat().st_size for f in files if f.is_file())
    records = [*store.list(), *store.relations()]
    live = len(records)
    after = sum(map(len, record_lines(records)))
    reclaim_lines, reclaim_bytes = max(0, lines - live), max(0, on_disk - after)
    return {
        "live_records": live,
        "lines_on_disk": lines,
        "compact_would_remove_lines": reclaim_lines,
        "compact_would_reclaim_bytes": reclaim_bytes,
        "compaction_hint": (
            f"compact would drop {reclaim_lines:,} superseded or deleted line(s) and reclaim "
            f"~{reclaim_bytes:,} bytes"
            if reclaim_lines
            else "nothing to compact"
        ),
    }


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


@app.command("repair-context")
def repair_context(
    storage_path: PathOption = None,
    as_json: JsonOption = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only count what would change.")
    ] = False,
) -> None:
    """Move the previous memory's text out of the context of memories saved before 2.x kept it
    apart: it stays a ranking signal, no longer shown, merged or written to notes. Safe to run
    again (finds nothing the second time)."""
    from cortexgraph.settings import load_settings
    from cortexgraph.storage.recent_saves import repair_neighbour_contexts

    settings = load_settings(storage_path=storage_path or _GLOBAL["storage_path"])
    store = _open(storage_path, dry_run=dry_run)
    try:
        report = repair_neighbour_contexts(store, settings.save_context_window_s, dry_run=dry_run)
    except CortexGraphError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    data = {"storage_path": str(settings.storage_path), **report.to_json()}
    if not as_json:
        data.pop("memory_ids")
        data.pop("dry_run")  # the title says it
    _print(data, as_json, "context repair (dry run)" if dry_run else "context repair")
    if not as_json and (report.moved or report.merged):
        typer.echo(
            "Vault notes written before keep that text in their Context section: "
            "`cortexgraph vault refresh` (and every consolidation run) takes it out."
        )


def main() -> None:
    from cortexgraph.process_env import settings_or_exit
    from cortexgraph.settings_env import warn_unknown_env

    warn_unknown_env()  # a misspelt CORTEXGRAPH_* variable is named on stderr, not ignored
    settings_or_exit("cortexgraph-maintenance")  # a bad value: one line and exit 2
    app(prog_name="cortexgraph-maintenance")


if __name__ == "__main__":
    main()
