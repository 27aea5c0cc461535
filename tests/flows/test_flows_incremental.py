"""``cortexgraph-consolidate`` runs incrementally (issue 32): after no change it says so.

Through the real CLI and the flow (the session's Prefect test server), on the demo store.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
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
    # What its merges made after its decay step (old, fading) is judged by the next run.
    judged = CliRunner().invoke(app, [*args, "--json"])
    assert json.loads(judged.stdout)["incremental"]["crossing"] >= 1

    again = CliRunner().invoke(app, [*args, "--json"])
    assert again.exit_code == 0, again.output
    data = json.loads(again.stdout)
    assert data["incremental"]["nothing_changed"] is True
    assert data["incremental"]["summary"].startswith(
        "incremental: nothing changed since the last run at"
    )
    # The store was not even opened (tests/flows/test_flows_untouched_run.py): each agent says so.
    assert data["reports"]["cluster"]["skipped"] == data["incremental"]["summary"]

    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "nothing changed since the last run at" in text.stdout

    open_store(store_dir).save("Dana moved the standup to ten", now=None)
    one = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert one["incremental"]["changed"] == 1

    full = json.loads(CliRunner().invoke(app, [*args, "--json", "--full"]).stdout)
    assert full["incremental"] is None
    assert full["reports"]["cluster"]["scanned"] > 1


def test_what_another_process_saves_during_a_run_is_seen_by_the_next(
    prefect_harness, demo_dirs, no_beads
):
    """The MCP server (another process) saves and uses memories while the hourly run works:
    the run's state must not take them as judged, or no incremental run would ever look at
    them again (only the weekly full run). The run's own writes still count as seen."""
    import subprocess
    import sys

    from cortexgraph.flows.consolidation import run_pipeline
    from cortexgraph.flows.pipeline_setup import RunOptions
    from cortexgraph.settings import Settings

    store_dir, vault = demo_dirs
    used = next(iter(open_store(store_dir).list())).id
    writer = (
        "import sys; from cortexgraph.storage import open_store; s = open_store(sys.argv[1]); "
        "s.save('Dana moved the standup to ten'); s.touch(sys.argv[2])"
    )

    def beside(name, report, seconds):
        if name == "decay":  # mid-run, from another process
            subprocess.run([sys.executable, "-c", writer, str(store_dir), used], check=True)

    settings = Settings(storage_path=store_dir, vault_path=vault)
    options = RunOptions(use_embeddings=False)
    first = run_pipeline(settings, replace(options, on_step=beside))
    assert first.reports["merge"].outcomes  # the run wrote merges of its own
    with np.load(store_dir / STATE_FILE) as data:
        assert "files" not in data.files  # no record of the files: the next run opens the store

    after = run_pipeline(settings, options)
    assert after.scope is not None
    changed = {open_store(store_dir).get(i).content for i in after.scope.changed}
    assert "Dana moved the standup to ten" in changed
    assert open_store(store_dir).get(used).content in changed
    assert len(changed) == 2  # nothing the first run merged or promoted itself
