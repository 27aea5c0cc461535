"""``cortexgraph-mcp``: the MCP server over stdio (default) or streamable HTTP (``--http``).

In stdio mode stdout carries protocol messages only; every log line goes to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _port(text: str) -> int:
    """A TCP port, or argparse's one-line error naming --port (not asyncio's traceback)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        shown = text if port != -1 else repr(text)
        raise argparse.ArgumentTypeError(f"{shown} is not a port (1-65535)")
    return port


def _log_level(text: str) -> str:
    """One of logging's names, in any case."""
    if text.strip().upper() not in _LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(_LOG_LEVELS)}")
    return text.strip().upper()


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="cortexgraph-mcp", description=(__doc__ or "").replace("``", "")
    )
    p.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    p.add_argument(
        "--host",
        default=None,
        help="HTTP bind address (default 127.0.0.1; any "
        "other address requires CORTEXGRAPH_HTTP_TOKEN)",
    )
    p.add_argument("--port", type=_port, default=None, help="HTTP port (default 8765)")
    p.add_argument(
        "--storage-path", default=None, help="STM directory (overrides CORTEXGRAPH_STORAGE_PATH)"
    )
    p.add_argument(
        "--log-level",
        type=_log_level,
        default=None,
        help="DEBUG, INFO, WARNING, ERROR or CRITICAL (default INFO)",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    from cortexgraph.storage import native_memory

    native_memory.tune_for_server()  # before any thread: freed batches go back (issue 35)
    native_memory.limit_blas_threads(1)  # one BLAS packing buffer, not one per core
    from cortexgraph.process_env import prepare_process, settings_or_exit

    prepare_process()
    from cortexgraph.settings_env import warn_unknown_env

    warn_unknown_env()  # a misspelt CORTEXGRAPH_* variable is named on stderr, not ignored
    settings = settings_or_exit(  # a bad value: one line on stderr and exit 2
        "cortexgraph-mcp",
        storage_path=args.storage_path,
        log_level=args.log_level,
        http_host=args.host,
        http_port=args.port,
    )
    # Configure before the SDK does, so its handler (rich, on stderr) is not installed first.
    logging.basicConfig(
        stream=sys.stderr,
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from cortexgraph.mcp_server.errors import ClipLogRecords

    for handler in logging.getLogger().handlers:
        handler.addFilter(ClipLogRecords())  # the SDK logs every error text a client provoked
    from cortexgraph.mcp_server.app import build_server

    server = build_server(settings)
    try:
        if args.http:
            from cortexgraph.mcp_server.http import run_http

            run_http(
                server,
                settings.http_host,
                settings.http_port,
                settings.http_token,
                settings.log_level,
            )
        else:
            from cortexgraph.mcp_server.stdio import run_stdio

            run_stdio(server)  # the SDK's stdio, answering lines it cannot parse
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
