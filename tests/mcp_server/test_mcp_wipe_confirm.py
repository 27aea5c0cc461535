"""memory_wipe's confirmation is the store's absolute path (issue 30, Low): a path relative to
the server's working folder was accepted."""

from __future__ import annotations

import anyio
from mcp import Client
from mcp_common import error_text, make_settings

from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store


def test_memory_wipe_refuses_a_relative_path_even_when_it_names_the_store(tmp_path, monkeypatch):
    settings = make_settings(tmp_path)
    open_store(tmp_path / "stm").save("kept: the wipe is not confirmed")
    monkeypatch.chdir(tmp_path)  # "stm" and "./stm" now name the store, relatively

    async def go():
        async with Client(build_server(settings)) as client:
            return [
                error_text(await client.call_tool("memory_wipe", {"confirm": c}))
                for c in ("stm", "./stm", "../" + tmp_path.name + "/stm")
            ]

    for refused in anyio.run(go):
        assert "Nothing was deleted" in refused
    assert len(open_store(tmp_path / "stm")) == 1
