"""Fixtures of the CLI tests; the helpers live in cli_helpers.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import Cli


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)
