"""`cortexgraph analyze "message"`: what the activation layer makes of one message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    help="Analyse a message: save / search recommendation and parameters.",
    # A group parses its own options only before positionals unless told otherwise.
    context_settings={"allow_interspersed_args": True},
)


@app.callback(invoke_without_command=True)
def analyze(
    message: Annotated[str, typer.Argument(help="the message to analyse")],
    recall: Annotated[bool, typer.Option("--recall", help="analyse as a recall request")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    store_path: Annotated[
        Path | None,
        typer.Option(
            "--storage-path",
            "--store",
            help="STM directory for duplicate checks (--store is its older name)",
        ),
    ] = None,
) -> None:
    from cortexgraph.activation import ActivationConfig, analyze_for_recall, analyze_message
    from cortexgraph.settings import load_settings

    settings = load_settings(storage_path=store_path)
    config = ActivationConfig.from_mapping(settings)
    if recall:
        result = analyze_for_recall(message, config=config).to_json()
    else:
        store = None
        if store_path is not None:
            from cortexgraph.cli.cli_common import cli_errors, existing_store_path
            from cortexgraph.storage import open_store

            with cli_errors():  # a mistyped path is refused, not created
                path = existing_store_path(settings, store_path)
            store = open_store(path, config=settings.store_config())
        result = analyze_message(message, store=store, config=config).to_json()
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    _print_table(result)


def _print_table(result: dict[str, object]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_header=False, box=None)
    for key, value in result.items():
        if isinstance(value, dict | list):
            value = json.dumps(value)
        table.add_row(f"[bold]{key}[/bold]", str(value))
    Console().print(table)
