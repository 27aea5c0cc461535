"""A seeded demo store for the flow tests (the Prefect test server is in tests/conftest.py)."""

from __future__ import annotations

import pytest

SEED_NOW = 1_760_000_000.0


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
