"""`cortexgraph serve --ui`: the local web view (webui/) on 127.0.0.1, served by uvicorn."""

from __future__ import annotations

import socket
from typing import Annotated

import typer

from cortexgraph.cli.cli_common import (
    StorageOpt,
    VaultOpt,
    check_named_vault,
    cli_errors,
    err,
    existing_store_path,
    settings_for,
)


def serve(
    ui: Annotated[bool, typer.Option("--ui", help="serve the web view")] = False,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="0: any free port")] = 8766,
    embeddings: Annotated[
        bool, typer.Option("--embeddings/--no-embeddings", help="semantic search (MiniLM)")
    ] = True,
    storage_path: StorageOpt = None,
    vault: VaultOpt = None,
) -> None:
    """Serve the local web view on 127.0.0.1: search, graph, decay curves, reviews, runs."""
    if not ui:
        err.print(
            "choose what to serve: --ui (the web view); the MCP server is `cortexgraph-mcp --http`"
        )
        raise typer.Exit(2)
    import uvicorn

    from cortexgraph.webui.app import create_app

    with cli_errors():
        settings = settings_for(storage_path, vault)
        existing_store_path(settings, storage_path)  # a mistyped path is refused, not created
        check_named_vault(settings, vault)  # so is a mistyped vault, not shown empty
        app = create_app(settings, use_embeddings=embeddings)
    # Bound here, so the address printed is the one served (--port 0: the port the system
    # chose) and a port in use is one line, not uvicorn's log.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(128)  # connections wait from now on: the address printed answers
    except OSError as exc:
        sock.close()
        err.print(f"[red]error:[/] cannot listen on 127.0.0.1:{port}: {exc.strerror}")
        raise typer.Exit(2) from exc
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    err.print(
        f"cortexgraph web view on http://127.0.0.1:{port}/ (store {settings.storage_path}, "
        f"vault {settings.vault_path}); Ctrl-C stops it",
        highlight=False,
    )
    server.run(sockets=[sock])


__all__ = ["serve"]
