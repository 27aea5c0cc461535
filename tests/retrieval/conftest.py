"""Fixtures for the retrieval tests: a store at a fixed time, a small vault, the counter."""

from __future__ import annotations

import pytest
from retrieval_helpers import write_note

from cortexgraph.retrieval.tokens import default_counter
from cortexgraph.storage import InMemoryStore


@pytest.fixture(scope="session")
def counter():
    return default_counter()


@pytest.fixture
def store():
    return InMemoryStore()


@pytest.fixture
def vault(tmp_path):
    v = tmp_path / "vault"
    write_note(
        v,
        "People/Alice.md",
        "# Alice\n\nAlice leads the [[Atlas]] project and reviews every billing change.\n",
    )
    write_note(
        v,
        "Projects/Atlas.md",
        "# Atlas\n\nAtlas is the billing platform rewrite. Owner: [[Alice]].\n",
    )
    write_note(v, "Rules.md", "# Rules\n\nAlways answer in British English.\n", core=True)
    return v
