"""save_memory and the store's limits on entities and tags.

A memory naming 401 services, saved with no entities given, failed with "Invalid input:
entities: 401 given; the limit is 256": the caller gave none. A long path in the text became an
entity (and tag) over 200 characters and failed the same way. What save_memory fills in by
itself is a suggestion: the store's limits bound it. A refusal of what the caller gave named
"CORTEXGRAPH_MAX_ENTITYS", a setting that does not exist.
"""

from __future__ import annotations

import random
import string
from pathlib import Path

import anyio
from mcp import Client
from mcp_helpers import error_text, make_settings, payload

from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store


def _calls(tmp_path: Path, *calls: tuple[str, dict], **settings) -> list:
    async def go() -> list:
        async with Client(build_server(make_settings(tmp_path, **settings))) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def test_extracted_entities_and_tags_are_bounded_by_the_stores_limits(tmp_path: Path) -> None:
    rng = random.Random(1)
    names = ["".join(rng.choices(string.ascii_lowercase, k=7)).capitalize() for _ in range(400)]
    many = "Deployed services: " + " ".join(f"{n}Service" for n in names) + "."
    deep = "The config lives in " + "/".join(["directory"] * 30) + "/settings.yaml for now."
    results = _calls(
        tmp_path,
        ("save_memory", {"content": many}),
        ("save_memory", {"content": deep}),
        enable_preprocessing=True,
    )
    saved = [payload(r) for r in results]
    config = open_store(tmp_path / "stm").config
    for out in saved:
        assert len(out["entities"]) <= config.max_entities
        assert len(out["tags"]) <= config.max_tags
        assert all(len(e) <= config.max_entity_chars for e in out["entities"])
        assert all(len(t) <= config.max_tag_chars for t in out["tags"])
    assert len(saved[0]["entities"]) == config.max_entities  # the first ones named
    assert len(open_store(tmp_path / "stm")) == 2


def test_too_many_entities_given_names_the_setting_that_exists(tmp_path: Path) -> None:
    (result,) = _calls(
        tmp_path,
        ("save_memory", {"content": "ok", "entities": ["a", "b", "c"]}),
        max_entities=2,
    )
    assert "CORTEXGRAPH_MAX_ENTITIES" in error_text(result)
