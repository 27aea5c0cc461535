"""What a bad address of a resource answers: a message that says what to fix.

`cortexgraph://graph?page=abc` answered "Error creating resource from template
cortexgraph://graph?page=abc" (the SDK's words for a value that is not an int), which does not
say that page must be a whole number.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_helpers import make_settings

from cortexgraph.mcp_server.app import build_server


@pytest.mark.parametrize("page", ["abc", "1.5", "", "0", "-2", "1e3", "١"])
def test_a_bad_graph_page_says_what_page_must_be(tmp_path: Path, page: str) -> None:
    async def go() -> str:
        async with Client(build_server(make_settings(tmp_path))) as client:
            with pytest.raises(MCPError) as info:
                await client.read_resource(f"cortexgraph://graph?page={page}")
            return str(info.value)

    message = anyio.run(go)
    assert "page must be a whole number, 1 or more" in message, message
    assert len(message) < 300


@pytest.mark.parametrize("page", ["1", "2", "01"])
def test_a_good_graph_page_is_read(tmp_path: Path, page: str) -> None:
    async def go() -> str:
        async with Client(build_server(make_settings(tmp_path))) as client:
            result = await client.read_resource(f"cortexgraph://graph?page={page}")
            return result.contents[0].text

    assert '"page": ' + str(int(page)) in anyio.run(go)
