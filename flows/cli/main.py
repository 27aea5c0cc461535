"""The ``cortexgraph`` command: one entry point whose subcommands live in sibling modules."""

from __future__ import annotations

import typer

from cortexgraph.process_env import prepare_process
from flows.cli import analyze_cmd, context_cmd, demo_cmd, graph_cmd, issues_cmd, vault_cmd

app = typer.Typer(
    help="cortexgraph: temporal memory for AI assistants.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.command("demo")(demo_cmd.demo)
app.add_typer(vault_cmd.app, name="vault")
app.add_typer(issues_cmd.app, name="issues")
app.add_typer(analyze_cmd.app, name="analyze")
app.command("context", help="Token-budgeted context for a query, from every memory tier.")(
    context_cmd.context
)
app.command("graph", help="Draw the vault/memory graph to a PNG or an HTML page.")(graph_cmd.graph)


def main() -> None:
    prepare_process()
    app(prog_name="cortexgraph")


if __name__ == "__main__":
    main()
