"""``cortexgraph-consolidate`` runs incrementally (issue 32): after no change it says so.

Through the real CLI and the flow (the session's Prefect test server), on the demo store.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cortexgraph.cli.consolidate import app
from cortexgraph.run_state import STATE_FILE
from cortexgraph.storage import open_store


@pytest.fixture
def no_beads(monkeypatch):
    monkeypatch.setenv("CORTEXGRAPH_BEADS_ENABLED", "false")
    monkeypatch.setenv("CORTEXGRAPH_ENABLE_EMBEDDINGS", "false")


def test_a_run_after_no_change_says_so_and_full_looks_at_everything(
    prefect_harness, demo_dirs, no_beads
):
    store_dir, vault = demo_dirs
    args = ["--storage-path", str(store_dir), "--vault", str(vault), "--no-embeddings"]
    first = CliRunner().invoke(app, [*args, "--json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["incremental"] is None  # no earlier state: a full run
    assert (store_dir / STATE_FILE).is_file()

    again = CliRunner().invoke(app, [*args, "--json"])
    assert again.exit_code == 0, again.output
    data = json.loads(again.stdout)
    assert data["incremental"]["nothing_changed"] is True
    assert data["incremental"]["summary"].startswith(
        "incremental: nothing changed since the last run at"
    )
    assert data["reports"]["cluster"]["scanned"] == 0

    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "nothing changed since the last run at" in text.stdout

    open_store(store_dir).save("Dana moved the standup to ten", now=None)
    one = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert one["incremental"]["changed"] == 1

    full = json.loads(CliRunner().invoke(app, [*args, "--json", "--full"]).stdout)
    assert full["incremental"] is None
    assert full["reports"]["cluster"]["scanned"] > 1
