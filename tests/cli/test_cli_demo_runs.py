"""`cortexgraph demo` end to end, several times: every run ends with a non-empty unified
STM+LTM search, and the vault's notes carry short titles."""

from __future__ import annotations

import re

import pytest
from cli_helpers import Cli

# Two runs, not three: the empty-search failure this guards against came from state a run
# left for the next (6ced3bf), which a second run shows; the merge decisions themselves no
# longer depend on embedding order (tests/agents/test_agents_cluster_restatements.py). Each run
# is a whole demo in its own process (~50 s of CPU), the longest test of the suite.
RUNS = 2


@pytest.mark.slow
def test_demo_ends_with_a_non_empty_unified_search_every_time(tmp_path, prefect_harness):
    """Two demos (the MiniLM model each time): the flow runs on the session's Prefect server."""
    for run in range(RUNS):
        cli = Cli(tmp_path / f"run{run}", process=True)  # the demo as a user runs it
        folder = tmp_path / f"demo{run}"
        # The demo's own choice of similarity: MiniLM when installed, as a new user runs it.
        done = cli("demo", "--dir", str(folder), CORTEXGRAPH_ENABLE_EMBEDDINGS="true")
        tail = done.stdout.split("unified STM+LTM search", 1)
        assert len(tail) == 2, done.stdout[-3000:]
        rows = re.findall(r"│\s+\d\.\d\d\s+│\s+(STM|LTM|BOTH)\s+│", tail[1])
        assert rows, f"run {run}: empty unified search\n{done.stdout[-3000:]}"
        notes = sorted((folder / "vault" / "cortexgraph").glob("*.md"))
        assert notes
        for note in notes:
            assert "…" not in note.stem and len(note.stem) <= 60, note.stem
            assert f"• {note.stem}" in done.stdout or len(notes) > 10
