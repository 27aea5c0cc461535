"""save_memory and the store's limits on entities and tags.

A refusal named "CORTEXGRAPH_MAX_ENTITYS", a setting that does not exist (the limit is
CORTEXGRAPH_MAX_ENTITIES).
"""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import Client
from mcp_helpers import error_text, make_settings

from cortexgraph.mcp_server.app import build_server


def _calls(tmp_path: Path, *calls: tuple[str, dict], **settings) -> list:
    async def go() -> list:
        async with Client(build_server(make_settings(tmp_path, **settings))) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def test_too_many_entities_given_names_the_setting_that_exists(tmp_path: Path) -> None:
    (result,) = _calls(
        tmp_path,
        ("save_memory", {"content": "ok", "entities": ["a", "b", "c"]}),
        max_entities=2,
    )
    assert "CORTEXGRAPH_MAX_ENTITIES" in error_text(result)
