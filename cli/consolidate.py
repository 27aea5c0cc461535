"""``cortexgraph-consolidate``: run the consolidation flow in this process, with a progress display.

cortexgraph-consolidate                      # the whole pipeline, live
cortexgraph-consolidate --dry-run            # preview: writes nothing at all
cortexgraph-consolidate --full               # every memory, not only what changed since the last run
cortexgraph-consolidate --agent decay --agent relations
cortexgraph-consolidate --scheduled --interval-hours 6   # only if the last run is older
cortexgraph-consolidate status [--storage-path DIR] [--json]   # the last run's results
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cortexgraph.process_env import prepare_process, settings_or_exit
from cortexgraph.storage.errors import CortexGraphError, InvalidInputError
from cortexgraph.user_store import last_run

if TYPE_CHECKING:  # the flow's modules load when a run starts, not for `status`
    from cortexgraph.flows.pipeline_setup import RunOptions

app = typer.Typer(
    help="Run the consolidation pipeline (decay, cluster, merge, promote, relations).",
    invoke_without_command=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

StoragePath = Annotated[Path | None, typer.Option("--storage-path", help="STM directory")]


def _settings(storage_path: Path | None, vault: Path | None) -> Any:
    from cortexgraph.settings import load_settings

    return load_settings(storage_path=storage_path, ltm_vault_path=vault)


@app.callback()
def run(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="preview; write nothing")] = False,
    agent: Annotated[
        list[str] | None, typer.Option("--agent", help="run only this agent (repeatable)")
    ] = None,
    scheduled: Annotated[
        bool, typer.Option("--scheduled", help="run only if the last run is older")
    ] = False,
    interval_hours: Annotated[
        float | None,
        typer.Option(help="with --scheduled (default: CORTEXGRAPH_CONSOLIDATION_INTERVAL, 3600 s)"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    storage_path: StoragePath = None,
    vault: Annotated[Path | None, typer.Option("--vault", help="Obsidian vault (LTM)")] = None,
    merge_mode: Annotated[str, typer.Option(help="apply | preview | link")] = "apply",
    gc: Annotated[str, typer.Option(help="off | archive | delete forgotten memories")] = "off",
    no_embeddings: Annotated[bool, typer.Option("--no-embeddings", help="TF-IDF only")] = False,
    full: Annotated[
        bool, typer.Option("--full", help="every memory, not only what changed since the last run")
    ] = False,
    task_runner: Annotated[str, typer.Option(help="threads | dask")] = "threads",
    dask_address: Annotated[
        str | None, typer.Option(help="with --task-runner dask: a running scheduler, tcp://…")
    ] = None,
) -> None:
    if ctx.invoked_subcommand is not None:
        ctx.obj = {"storage_path": storage_path, "vault": vault, "json": as_json}
        return
    if interval_hours is not None and not interval_hours > 0:  # a sign or a 0 ran every time
        raise typer.BadParameter(
            f"{interval_hours:g} is not an interval; give hours above 0 (0.5: half an hour)",
            param_hint="--interval-hours",
        )
    try:
        settings = _settings(storage_path, vault)
        from cortexgraph.cli.cli_common import existing_store_path, writable_vault

        existing_store_path(settings, storage_path)  # a mistyped path is refused, not created
        writable_vault(settings, vault)  # so is a mistyped vault, before the flow starts
        if dask_address and task_runner != "dask":  # else it is ignored without a word
            raise InvalidInputError(
                f"--dask-address needs --task-runner dask (the run would use {task_runner} here)"
            )
        if scheduled:
            hours = (
                interval_hours
                if interval_hours is not None
                else (settings.consolidation_interval / 3600)
            )
            last = last_run(settings.storage_path)
            age = time.time() - last["finished_at"] if last else None
            if age is not None and age < hours * 3600:
                _say(
                    as_json,
                    {"skipped": True, "reason": f"last run {age / 3600:.2f} h ago (< {hours:g} h)"},
                )
                return
        from cortexgraph.flows.local_server import start_local_server

        start_local_server()  # Prefect's server comes up while the pipeline loads (if needed)
        from cortexgraph.agents.pipeline import select_agents
        from cortexgraph.flows.pipeline_setup import RunOptions

        options = RunOptions(
            dry_run=dry_run,
            agents=select_agents(agent),
            merge_mode=merge_mode,
            gc=gc,
            use_embeddings=not no_embeddings,
            task_runner=task_runner,
            dask_address=dask_address,
            full=full,
        )
        report = run_with_progress(settings, options, quiet=as_json)  # the flow records it
    except CortexGraphError as exc:
        _fail(as_json, str(exc))
    if as_json:
        typer.echo(json.dumps(report.to_json(), default=str))
    else:
        print_report_tables(report)


def run_with_progress(
    settings: Any, options: RunOptions, *, quiet: bool = False, console: Any = None
) -> Any:
    """Run the flow in-process; unless quiet, with a rich progress bar on stderr."""
    from cortexgraph.flows.consolidation import run_pipeline

    if quiet:
        return run_pipeline(settings, options)
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = console or Console(stderr=True)
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} agents"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        bar = progress.add_task(
            "consolidating" + (" (dry run)" if options.dry_run else ""), total=len(options.agents)
        )

        def on_step(name: str, report: Any, seconds: float) -> None:
            progress.advance(bar)
            progress.console.print(
                f"[green]✓[/] {name:<10} {seconds:6.2f} s  {escape(report.table().summary)}",
                highlight=False,
            )

        return run_pipeline(settings, replace(options, on_step=on_step))


def print_report_tables(report: Any, max_rows: int = 15, console: Any = None) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    console = console or Console()
    scope = getattr(report, "scope", None)
    # Stored text (memories, entities, paths) is printed as text, never read as markup.
    console.print(
        scope.describe() if scope is not None else "full run", highlight=False, markup=False
    )
    for note in report.notes:
        console.print(f"[dim]• {escape(note)}[/]", highlight=False)
    for t in report.tables():
        # The summary is a line of its own, at the console's width: as the caption of a
        # narrow table (an empty one above all) it was folded to that table's width.
        if not t.rows:
            console.print(f"[bold]{escape(t.title)}[/]: {escape(t.summary)}", highlight=False)
            continue
        table = Table(title=t.title, show_lines=False)
        for col in t.columns:
            table.add_column(col, overflow="fold", max_width=60)
        for row in t.rows[:max_rows]:
            table.add_row(*(Text(str(cell)) for cell in row))
        if len(t.rows) > max_rows:
            table.add_row(*(["…"] + [""] * (len(t.columns) - 1)))
        console.print(table)
        console.print(escape(t.summary), highlight=False)
    verb = "previewed (dry run: nothing written)" if report.dry_run else "done"
    console.print(f"[bold]consolidation {verb} in {report.total_seconds:.2f} s[/]")


@app.command()
def status(
    ctx: typer.Context,
    storage_path: StoragePath = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Show the last live run's results."""
    # The options may come before the command or after it (as cortexgraph-maintenance's).
    opts = ctx.obj or {}
    storage_path = storage_path or opts.get("storage_path")
    as_json = as_json or bool(opts.get("json"))
    settings = _settings(storage_path, opts.get("vault"))
    from cortexgraph.cli.cli_common import existing_store_path

    try:
        existing_store_path(settings, storage_path)  # a mistyped store is not "never run"
    except CortexGraphError as exc:
        _fail(as_json, str(exc))
    last = last_run(settings.storage_path)
    if as_json:
        typer.echo(json.dumps(last))
        return
    if last is None:
        typer.echo(f"no consolidation has run on {settings.storage_path} yet")
        return
    ago = (time.time() - last["finished_at"]) / 3600
    typer.echo(
        f"last run {ago:.2f} h ago, {last['total_seconds']:.2f} s, agents "
        f"{', '.join(last['agents'])}"
    )
    for name, summary in last["summaries"].items():
        typer.echo(f"  {name:<10} {summary}")


def _say(as_json: bool, data: dict[str, Any]) -> None:
    typer.echo(json.dumps(data) if as_json else data.get("reason", data))


def _fail(as_json: bool, message: str) -> None:
    if as_json:
        typer.echo(json.dumps({"error": message}))
    else:
        typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def main() -> None:
    prepare_process()
    from cortexgraph.settings_env import warn_unknown_env

    warn_unknown_env()  # a misspelt CORTEXGRAPH_* variable is named on stderr, not ignored
    settings_or_exit("cortexgraph-consolidate")  # a bad value: one line and exit 2
    app(prog_name="cortexgraph-consolidate")


if __name__ == "__main__":
    main()
