"""`cortexgraph vault` subcommands."""

from __future__ import annotations

import typer

app = typer.Typer(help="vault commands", no_args_is_help=True)
