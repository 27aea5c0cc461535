"""A ``cortexgraph-consolidate`` run after no change opens nothing, and loads nothing that opens
the store, the tracker or the vault either: their modules load with a run that opens them
(flows.pipeline_setup.build_pipeline). Through the console script's ``main`` in a child
process, on the demo store, against the session's Prefect test server.
"""

from __future__ import annotations

import json

from child_env import child_env, run_code
from typer.testing import CliRunner

from cortexgraph.cli.consolidate import app

# The child runs the CLI as its console script does, then says what it loaded.
CHILD = """
import atexit, json, sys
loaded = ("cortexgraph.flows.wiring", "cortexgraph.storage.beads", "cortexgraph.vault_sync",
          "cortexgraph.activation.monitor", "cortexgraph.activation.entity_batch")
atexit.register(lambda: print("LOADED " + json.dumps([m for m in loaded if m in sys.modules])))
sys.argv = ["cortexgraph-consolidate", *sys.argv[1:]]
from cortexgraph.cli.consolidate import main
main()
"""


def test_a_run_after_no_change_loads_nothing_that_opens_the_store(demo_dirs, prefect_harness):
    store_dir, vault = demo_dirs
    args = ["--storage-path", str(store_dir), "--vault", str(vault), "--json"]
    env = child_env(
        PREFECT_API_URL=prefect_harness,
        CORTEXGRAPH_BEADS_ENABLED="false",
        CORTEXGRAPH_ENABLE_EMBEDDINGS="false",
    )
    first = CliRunner().invoke(app, args, env=env)  # the run that leaves the run state
    assert first.exit_code == 0, first.output
    # The next judges what its merges made and let cluster (agents.run_scope.RunScope).
    second = CliRunner().invoke(app, args, env=env)
    assert second.exit_code == 0, second.output

    out = run_code(CHILD, *args, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    report = json.loads(next(line for line in lines if line.startswith("{")))
    assert report["incremental"]["nothing_changed"]
    loaded = json.loads(next(line for line in lines if line.startswith("LOADED "))[7:])
    assert loaded == []
