"""The web view searches with the configured weights, as `cortexgraph vault search` and MCP's
search_unified do (it used to fall back to search_unified's own semantic weight)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from cortexgraph import vault_sync
from cortexgraph.settings import Settings
from cortexgraph.webui import views


def test_settings_give_each_weight_as_configured_unless_one_is_passed() -> None:
    s = Settings(
        semantic_weight=0.9,
        search_stm_weight=2.0,
        search_ltm_weight=0.5,
        search_archive_weight=0.25,
        search_related_weight=0.05,
    )
    assert s.unified_search_weights() == {
        "stm_weight": 2.0,
        "ltm_weight": 0.5,
        "semantic_weight": 0.9,
        "archive_weight": 0.25,
        "related_weight": 0.05,
    }
    assert s.unified_search_weights(stm_weight=1.0)["stm_weight"] == 1.0


def test_the_web_view_passes_the_configured_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def search_unified(*args: Any, **kwargs: Any) -> list[Any]:
        seen.update(kwargs)
        return []

    monkeypatch.setattr(vault_sync, "search_unified", search_unified)
    state = SimpleNamespace(
        settings=Settings(semantic_weight=0.9, search_stm_weight=2.0, search_ltm_weight=0.5),
        store=object(),
        ltm_index=lambda: None,
        embedder=None,
    )
    assert views.search(state, "billing database", limit=5)["results"] == []
    assert (seen["stm_weight"], seen["ltm_weight"], seen["semantic_weight"]) == (2.0, 0.5, 0.9)
