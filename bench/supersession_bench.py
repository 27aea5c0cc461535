"""Precision of automatic supersession, through the MCP server as an assistant uses it.

Each labelled pair (tests/fixtures/supersession_labelled.jsonl, written by us: true updates
of one attribute of one subject, and ordinary statements that share a name or a change word)
is saved into a fresh store with ``save_memory(content)`` alone, the old text first. A pair
counts as detected when the second save reports the first as superseded.

    .venv/bin/python bench/supersession_bench.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CASES = ROOT / "tests" / "fixtures" / "supersession_labelled.jsonl"


def load_cases(path: Path = CASES) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


async def detect(cases: list[dict[str, Any]], **settings: Any) -> list[bool]:
    """For each case: did saving ``new`` after ``old`` supersede ``old``?"""
    from mcp import Client

    from cortexgraph.mcp_server.app import build_server
    from cortexgraph.settings import Settings

    out = []
    for case in cases:
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "vault").mkdir()  # a named vault must exist
            config = Settings(
                storage_path=Path(d) / "stm",
                ltm_vault_path=Path(d) / "vault",
                enable_embeddings=False,
                log_level="WARNING",
                **settings,
            )
            async with Client(build_server(config)) as client:
                first = await client.call_tool("save_memory", {"content": case["old"]})
                old_id = json.loads(first.content[0].text)["memory_id"]
                second = await client.call_tool("save_memory", {"content": case["new"]})
                superseded = json.loads(second.content[0].text)["temporal"]["superseded"]
                out.append(any(s["memory_id"] == old_id for s in superseded))
    return out


def scores(cases: list[dict[str, Any]], detected: list[bool]) -> dict[str, float]:
    tp = sum(1 for c, d in zip(cases, detected, strict=True) if d and c["update"])
    fp = sum(1 for c, d in zip(cases, detected, strict=True) if d and not c["update"])
    fn = sum(1 for c, d in zip(cases, detected, strict=True) if not d and c["update"])
    return {
        "true updates": sum(c["update"] for c in cases),
        "ordinary": sum(not c["update"] for c in cases),
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / (tp + fn) if tp + fn else 1.0,
        "false positives": fp,
    }


def main() -> int:
    from rich.console import Console
    from rich.table import Table

    cases = load_cases()
    detected = asyncio.run(detect(cases))
    s = scores(cases, detected)
    table = Table(title="Automatic supersession through save_memory (labelled pairs, defaults)")
    for col in s:
        table.add_column(col, justify="right")
    table.add_row(*(f"{v:.2f}" if isinstance(v, float) else str(v) for v in s.values()))
    Console(width=120).print(table)
    for case, hit in zip(cases, detected, strict=True):
        if hit != case["update"]:
            kind = "missed update" if case["update"] else "FALSE POSITIVE"
            print(f"{kind}: {case['old']!r} -> {case['new']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
