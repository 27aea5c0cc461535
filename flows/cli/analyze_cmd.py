"""`cortexgraph analyze` subcommands."""

from __future__ import annotations

import typer

app = typer.Typer(help="analyze commands", no_args_is_help=True)
