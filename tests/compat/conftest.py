"""Fixtures for the 1.x compatibility tests (tests/compat/compat_helpers.py holds the helpers)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_cortexgraph_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests set the variables they mean; none leak in from the machine."""
    import os

    for key in list(os.environ):
        if key.startswith(("CORTEXGRAPH_", "LTM_")):
            monkeypatch.delenv(key)
