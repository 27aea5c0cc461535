"""`cortexgraph context QUERY`: the token-budgeted context memory_retrieve would send."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

# A plain command, not a group: a group stops parsing options after its positional argument,
# so `cortexgraph context QUERY --budget 500` would fail. Register with
# `app.command("context")(context_cmd.context)`.
app = typer.Typer(help="Assemble token-budgeted context from STM, the vault and the graph.")


@app.command()
def context(
    query: Annotated[str, typer.Argument(help="what the context is for")],
    budget: Annotated[int, typer.Option("--budget", help="most tokens to return")] = 3000,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON with per-item ids")] = False,
    history: Annotated[bool, typer.Option("--history", help="include superseded facts")] = False,
    types: Annotated[
        list[str] | None,
        typer.Option("--type", help="tier to draw from (core, ltm, stm, graph); repeatable"),
    ] = None,
    after: Annotated[str | None, typer.Option("--after", help="ISO date")] = None,
    before: Annotated[str | None, typer.Option("--before", help="ISO date")] = None,
    embeddings: Annotated[
        bool, typer.Option("--embeddings/--no-embeddings", help="semantic similarity (MiniLM)")
    ] = False,
    storage_path: Annotated[
        Path | None, typer.Option("--storage-path", help="STM directory")
    ] = None,
    vault: Annotated[Path | None, typer.Option("--vault", help="Obsidian vault")] = None,
) -> None:
    """Print the context memory_retrieve would send for QUERY (token count on stderr)."""
    from cortexgraph.cli.cli_common import check_named_vault, existing_store_path
    from cortexgraph.retrieval.context import RetrievalFilters, memory_retrieve
    from cortexgraph.settings import load_settings
    from cortexgraph.storage.errors import CortexGraphError
    from cortexgraph.user_store import open_user_store

    settings = load_settings(storage_path=storage_path, ltm_vault_path=vault)
    try:
        filters = RetrievalFilters.from_mapping(
            {"memory_types": types, "after": after, "before": before}
        )
        existing_store_path(settings, storage_path)  # a mistyped path is refused, not created
        check_named_vault(settings, vault)  # so is a mistyped vault, not read as an empty one
        store = open_user_store(settings)
        index, embedder = None, None
        if settings.vault_path.is_dir():
            from cortexgraph.vault_sync.ltm_index import LTMIndex

            index = LTMIndex.open(settings.vault_path)
        if embeddings:
            from cortexgraph.storage.embeddings import default_embedder

            embedder = default_embedder()
        result = memory_retrieve(
            store,
            query,
            budget,
            filters,
            ltm_index=index,
            embedder=embedder,
            include_history=history,
            use_embeddings=embeddings and embedder is not None,
        )
    except CortexGraphError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if as_json:
        typer.echo(json.dumps(result.to_json(items=True), indent=2, ensure_ascii=False))
        return
    typer.echo(result.text)
    note = "; ".join(result.notes)
    typer.echo(
        f"\n{result.tokens_used}/{result.token_budget} tokens ({result.tokenizer}), "
        f"{len(result.items)} of {result.candidates} candidates" + (f"; {note}" if note else ""),
        err=True,
    )
