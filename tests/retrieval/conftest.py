"""Fixtures for the retrieval tests: a store at a fixed time, a small vault, the counter."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.tokens import default_counter
from storage import InMemoryStore

NOW = 1_700_000_000  # 2023-11-14
DAY = 86_400


@pytest.fixture(scope="session")
def counter():
    return default_counter()


@pytest.fixture
def store():
    return InMemoryStore()


def write_note(vault: Path, rel: str, body: str, **frontmatter: object) -> Path:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    head = ""
    if frontmatter:
        lines = [f"{k}: {str(v).lower() if isinstance(v, bool) else v}"
                 for k, v in frontmatter.items()]  # fmt: skip
        head = "---\n" + "\n".join(lines) + "\n---\n"
    path.write_text(head + body, encoding="utf-8")
    return path


@pytest.fixture
def vault(tmp_path):
    v = tmp_path / "vault"
    write_note(v, "People/Alice.md", "# Alice\n\nAlice leads the [[Atlas]] project and "
               "reviews every billing change.\n")  # fmt: skip
    write_note(v, "Projects/Atlas.md", "# Atlas\n\nAtlas is the billing platform rewrite. "
               "Owner: [[Alice]].\n")  # fmt: skip
    write_note(v, "Rules.md", "# Rules\n\nAlways answer in British English.\n", core=True)
    return v
