"""On an address others can reach, the HTTP server needs a strong token (issue 30, Low): a
one-character or whitespace token was accepted on 0.0.0.0."""

from __future__ import annotations

import pytest
from mcp_common import make_settings

from cortexgraph.mcp_server.app import build_server
from cortexgraph.mcp_server.http import http_app


@pytest.mark.parametrize("token", ["x", " ", "   \t ", "a" * 40, "short-token", " " + "k" * 30])
def test_a_public_bind_refuses_a_weak_token(tmp_path, token):
    with pytest.raises(SystemExit, match="weak token"):
        http_app(build_server(make_settings(tmp_path)), "0.0.0.0", token)


def test_a_strong_token_or_a_loopback_bind_still_serves(tmp_path):
    server = build_server(make_settings(tmp_path))
    assert http_app(server, "0.0.0.0", "dG9rZW4tMTIzNDU2Nzg5MGFiY2RlZg") is not None
    assert http_app(build_server(make_settings(tmp_path)), "127.0.0.1", None) is not None
