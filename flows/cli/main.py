"""The ``cortexgraph`` command: one entry point whose subcommands live in sibling modules."""

from __future__ import annotations

import typer

from flows.cli import analyze_cmd, graph_cmd, issues_cmd, vault_cmd

app = typer.Typer(
    help="cortexgraph: temporal memory for AI assistants.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(vault_cmd.app, name="vault")
app.add_typer(issues_cmd.app, name="issues")
app.add_typer(analyze_cmd.app, name="analyze")
app.command("graph", help="Draw the vault/memory graph to a PNG or an HTML page.")(graph_cmd.graph)

if __name__ == "__main__":
    app()
