"""`cortexgraph issues` subcommands."""

from __future__ import annotations

import typer

app = typer.Typer(help="issues commands", no_args_is_help=True)
