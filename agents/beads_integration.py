"""cortexgraph 1.x's beads helpers, where 1.x had them (``cortexgraph.agents.beads_integration``):
``create_consolidation_issue``, ``query_consolidation_issues``, ``claim_issue``, ``close_issue``.

They open the configured tracker themselves, so they are the thin helpers of flows/beads_api.py,
loaded on first use (PEP 562). Agents themselves take an IssueTracker (agents/protocols.py).
"""

from __future__ import annotations

from typing import Any

HELPERS = ("claim_issue", "close_issue", "create_consolidation_issue", "query_consolidation_issues")


def __getattr__(name: str) -> Any:
    if name in HELPERS:
        from cortexgraph.flows import beads_api

        return getattr(beads_api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(HELPERS)  # pyright: ignore[reportUnsupportedDunderAll]
