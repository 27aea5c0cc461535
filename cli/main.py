"""The ``cortexgraph`` command: one entry point whose subcommands live in sibling modules."""

from __future__ import annotations

import typer

from cortexgraph.cli import (
    analyze_cmd,
    context_cmd,
    demo_cmd,
    graph_cmd,
    issues_cmd,
    memory_cmd,
    plugin_cmd,
    serve_cmd,
    transfer_cmd,
    undo_cmd,
    vault_cmd,
    vault_refresh_cmd,
)
from cortexgraph.process_env import prepare_process, settings_or_exit

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
# The memory in your hands: look, edit, move, back up.
app.command("search")(memory_cmd.search)
app.command("list")(memory_cmd.list_memories)
app.command("show")(memory_cmd.show)
app.command("edit")(memory_cmd.edit)
app.command("export")(transfer_cmd.export)
app.command("import")(transfer_cmd.import_)
app.command("backup")(transfer_cmd.backup)
app.command("restore")(transfer_cmd.restore)
# Undo for every automatic change, and the history that shows what happened.
app.add_typer(undo_cmd.app, name="undo")
app.command("unarchive")(undo_cmd.unarchive_cmd)
app.command("unpromote")(undo_cmd.unpromote_cmd)
app.command("history")(undo_cmd.history_cmd)
app.command("serve")(serve_cmd.serve)
app.command("plugin")(plugin_cmd.plugin)
vault_cmd.app.command("refresh")(vault_refresh_cmd.refresh)


def main() -> None:
    prepare_process()
    from cortexgraph.settings_env import warn_unknown_env

    warn_unknown_env()  # a misspelt CORTEXGRAPH_* variable is named on stderr, not ignored
    settings_or_exit("cortexgraph")  # a bad value: one line and exit 2, before any command
    app(prog_name="cortexgraph")


if __name__ == "__main__":
    main()
