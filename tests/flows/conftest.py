"""One Prefect test server for the flow tests (session-wide), and a seeded demo store."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

SEED_NOW = 1_760_000_000.0


@pytest.fixture(scope="session")
def prefect_harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture
def demo_dirs(tmp_path):
    """A JSONL store seeded with the demo dataset, and a vault holding one hand-written note."""
    from cortexgraph.demo_data import seed_store
    from cortexgraph.storage import open_store

    store_dir, vault = tmp_path / "store", tmp_path / "vault"
    seed_store(open_store(store_dir), now=SEED_NOW)
    vault.mkdir()
    (vault / "Hand written.md").write_text("# Mine\n\nA note a person wrote.\n")
    return store_dir, vault
