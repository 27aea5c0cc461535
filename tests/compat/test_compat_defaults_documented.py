"""1.x's documented defaults (its API reference, shared/seeds/003_fba20078e87458fd.txt: the tool
parameter tables and "Configuration"), against what a client and a configuration find today:
each default that differs is named in docs/mcp.md "Coming from cortexgraph 1.x", so a user
of 1.x is told rather than surprised."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
from compat_helpers import make_settings
from mcp import Client

from cortexgraph.mcp_server.app import build_server
from cortexgraph.settings import Settings

ROOT = Path(__file__).resolve().parents[2]

# The 1.x reference's tool parameters with a default (its "Default" columns).
TOOL_DEFAULTS_1X = {
    ("search_memory", "top_k"): 10,
    ("search_memory", "use_embeddings"): False,
    ("search_unified", "limit"): 10,
    ("search_unified", "verbose"): False,
    ("touch_memory", "boost_strength"): False,
    ("gc", "dry_run"): True,
    ("gc", "archive_instead"): False,
    ("promote_memory", "auto_detect"): False,
    ("promote_memory", "dry_run"): False,
    ("promote_memory", "target"): "obsidian",
    ("promote_memory", "force"): False,
    ("cluster_memories", "strategy"): "similarity",
    ("consolidate_memories", "mode"): "preview",
    ("consolidate_memories", "auto_detect"): False,
    ("consolidate_memories", "cohesion_threshold"): 0.75,
    ("read_graph", "status"): "active",
    ("read_graph", "include_scores"): True,
    ("read_graph", "page"): 1,
    ("read_graph", "page_size"): 10,
    ("open_memories", "include_relations"): True,
    ("open_memories", "include_scores"): True,
    ("open_memories", "page"): 1,
    ("open_memories", "page_size"): 10,
    ("create_relation", "strength"): 1.0,
}
# Its "Environment Variables" table (and "Agent Configuration"), as Settings fields.
SETTING_DEFAULTS_1X = {
    "storage_path": Path("~/.config/cortexgraph/jsonl").expanduser(),
    "decay_model": "power_law",
    "pl_halflife_days": 3.0,
    "decay_lambda": 2.673e-6,
    "decay_beta": 0.6,
    "forget_threshold": 0.05,
    "promote_threshold": 0.65,
    "promote_use_count": 5,
    "enable_embeddings": False,
    "consolidation_interval": 3600,
    "min_cluster_size": 2,
    "auto_reinforce": True,
}


def _compat_section() -> str:
    text = (ROOT / "docs" / "mcp.md").read_text()
    return text[text.index("## Coming from cortexgraph 1.x") :]


def _schema_defaults(tmp_path: Path) -> dict[tuple[str, str], object]:
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return (await client.list_tools()).tools

    return {
        (tool.name, name): prop.get("default")
        for tool in anyio.run(go)
        for name, prop in tool.input_schema.get("properties", {}).items()
    }


def _named(section: str, *names: str) -> bool:
    """A row of the compat table whose first cell names each of ``names``."""
    rows = [line.split(" | ")[0] for line in section.splitlines() if line.startswith("| ")]
    return any(all(f"`{n}`" in row for n in names) for row in rows)


def test_every_tool_default_that_differs_from_1x_is_documented(tmp_path) -> None:
    ours = _schema_defaults(tmp_path)
    section = _compat_section()
    differing = {k: (v, ours[k]) for k, v in TOOL_DEFAULTS_1X.items() if ours[k] != v}
    assert differing, "nothing differs any more: this test's table is out of date"
    for (tool, param), (was, now) in differing.items():
        assert _named(section, tool, param), (
            f"{tool}({param}) defaults to {now!r}, 1.x to {was!r}: say so in docs/mcp.md"
        )


def test_every_setting_default_that_differs_from_1x_is_documented() -> None:
    section = _compat_section()
    for field, was in SETTING_DEFAULTS_1X.items():
        now = Settings.model_fields[field].default
        now = getattr(now, "value", now)
        if isinstance(now, Path):
            now = now.expanduser()
        if now == was:
            continue
        variable = f"CORTEXGRAPH_{field.upper()}"
        assert re.search(rf"`{variable}`[^\n]*1\.x", section), (
            f"{variable} defaults to {now!r}, 1.x to {was!r}: say so in docs/mcp.md"
        )
