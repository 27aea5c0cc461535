"""Streamable HTTP transport with an optional bearer token checked on every request.

On any loopback address (127.0.0.0/8, ::1 however spelled, localhost) the Host and Origin
headers must name a loopback host too (DNS-rebinding protection): a web page cannot reach the
server through a name of its own that resolves to 127.0.0.1.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from typing import Any

log = logging.getLogger("cortexgraph.mcp")

LOOPBACK_NAMES = {"localhost"}


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BearerTokenMiddleware:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = json.dumps(
                    {
                        "error": "unauthorized",
                        "error_description": "send the header 'Authorization: Bearer <CORTEXGRAPH_HTTP_TOKEN>'",
                    }
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="cortexgraph"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def loopback_spellings(host: str) -> list[str]:
    """The Host-header forms (without port) of the usual loopback names and of ``host``."""
    names = ["127.0.0.1", "localhost", "[::1]"]
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        address = None
    if address is not None and address.version == 6:
        names += [f"[{host.strip('[]')}]", f"[{address.compressed}]", f"[{address.exploded}]"]
    elif address is not None:
        names.append(str(address))
    return list(dict.fromkeys(n.lower() for n in names))


def rebinding_protection(host: str) -> Any:
    """Host/Origin checks for a loopback bind (None elsewhere: the token guards it there)."""
    if not is_loopback(host):
        return None
    from mcp.server.transport_security import TransportSecuritySettings

    names = loopback_spellings(host)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*names, *(f"{n}:*" for n in names)],
        allowed_origins=[*(f"http://{n}" for n in names), *(f"http://{n}:*" for n in names)],
    )


def http_app(server: Any, host: str, token: str | None) -> Any:
    """The Starlette app of ``server`` wrapped in the token check when a token is set."""
    if not is_loopback(host) and not token:
        raise SystemExit(
            f"cortexgraph-mcp: refusing to listen on {host} without a token; set "
            "CORTEXGRAPH_HTTP_TOKEN (clients send 'Authorization: Bearer <token>') or bind "
            "to 127.0.0.1"
        )
    if not is_loopback(host):
        weak = token_weakness(token or "")
        if weak:
            raise SystemExit(
                f"cortexgraph-mcp: refusing to listen on {host} with a weak token ({weak}); "
                f"set CORTEXGRAPH_HTTP_TOKEN to {MIN_TOKEN_CHARS}+ random characters, e.g. "
                "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            )
    app = server.streamable_http_app(host=host, transport_security=rebinding_protection(host))
    return BearerTokenMiddleware(app, token) if token else app


MIN_TOKEN_CHARS = 16


def token_weakness(token: str) -> str | None:
    """Why ``token`` is too weak to guard a server others can reach, or None."""
    if token != token.strip() or any(c.isspace() for c in token):
        return "it holds whitespace"
    if len(token) < MIN_TOKEN_CHARS:
        return f"{len(token)} characters, fewer than {MIN_TOKEN_CHARS}"
    if len(set(token)) < 6:
        return "too few distinct characters"
    return None


def run_http(server: Any, host: str, port: int, token: str | None, log_level: str) -> None:
    import uvicorn

    app = http_app(server, host, token)
    log.info(
        "cortexgraph: MCP over streamable HTTP on http://%s:%d/mcp%s",
        host,
        port,
        " (bearer token required)" if token else "",
    )
    uvicorn.run(app, host=host, port=port, log_level=log_level.lower(), access_log=False)


__all__ = [
    "BearerTokenMiddleware",
    "http_app",
    "is_loopback",
    "loopback_spellings",
    "rebinding_protection",
    "run_http",
]
