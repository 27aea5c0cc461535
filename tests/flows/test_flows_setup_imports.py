"""Building a live run's pipeline loads what the run uses, not the packages around it: the
behaviour monitor's ledger without its detectors and engine, the vault's note sink without the
LTM index or unified search, the beads tracker without the in-memory one, and the entity finder
without the extractor while no memory is left to read. In a child process (a fresh interpreter,
as the console script starts), on the demo store whose memories the MCP server has already read.
"""

from __future__ import annotations

import json

from child_env import child_env, run_code

CHILD = """
import json, sys
from cortexgraph.flows.pipeline_setup import RunOptions, build_pipeline
from cortexgraph.settings import load_settings
settings = load_settings(storage_path=sys.argv[1], ltm_vault_path=sys.argv[2])
pipeline, collab = build_pipeline(settings, RunOptions())
read, _ = pipeline.relations.read_entities()
print("LOADED " + json.dumps({"read": read, "modules": sorted(sys.modules)}))
"""

NOT_NEEDED = (
    "cortexgraph.activation.monitor.engine",  # the monitor: only its ledger moves records
    "cortexgraph.activation.monitor.detectors",
    "cortexgraph.activation.monitor.learning",
    "cortexgraph.vault_sync.ltm_index",  # the vault: only the note sink writes
    "cortexgraph.vault_sync.unified_search",
    "cortexgraph.vault_sync.vault_check",
    "cortexgraph.activation.entities",  # the finder: nothing left to read
    "cortexgraph.storage.beads.memory_tracker",  # issues: the beads tracker, not the fallback
)


def _build_in_child(store_dir, vault, env) -> dict:
    out = run_code(CHILD, str(store_dir), str(vault), env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    line = next(x for x in out.stdout.splitlines() if x.startswith("LOADED "))
    return json.loads(line[len("LOADED ") :])


def test_a_live_runs_setup_loads_only_what_the_run_uses(demo_dirs):
    from cortexgraph.activation.entity_batch import batch_entity_finder
    from cortexgraph.agents.entity_reading import find_entities
    from cortexgraph.settings import load_settings
    from cortexgraph.storage import open_store

    store_dir, vault = demo_dirs
    store = open_store(store_dir)
    memories = {m.id: m for m in store.list()}
    # what the MCP server's background reader leaves: every memory read by the run's finder
    finder = batch_entity_finder(load_settings().spacy_model)
    find_entities(store, memories, finder, limit=len(memories), dry_run=False)
    env = child_env(CORTEXGRAPH_ENABLE_EMBEDDINGS="false")

    loaded = _build_in_child(store_dir, vault, env)
    assert loaded["read"] == 0  # nothing left to read: the finder was never asked
    modules = set(loaded["modules"])
    assert "cortexgraph.vault_sync.note_sink" in modules  # the run's sink is built
    assert "cortexgraph.activation.monitor.ledger_store" in modules
    assert "cortexgraph.storage.beads.tracker" in modules  # the run's issues go to beads
    assert [m for m in NOT_NEEDED if m in modules] == []
