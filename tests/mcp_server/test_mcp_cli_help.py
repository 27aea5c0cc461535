"""`cortexgraph-mcp --help` reads as plain text (its description is the module's docstring)."""

from __future__ import annotations

import subprocess
import sys


def test_help_shows_the_description_without_markup() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "cortexgraph.mcp_server", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "streamable HTTP (--http)" in " ".join(out.split())
    assert "``" not in out
