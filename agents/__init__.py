"""The five consolidation agents: plain Python on small Protocols (agents/protocols.py), run in
order by agents/pipeline.py. Each agent lives in its module (agents.decay_analyzer.DecayAnalyzer
takes a store, a tracker and a config).

This package also answers cortexgraph 1.x's documented imports,
``from cortexgraph.agents import Scheduler, DecayAnalyzer, ClusterDetector, SemanticMerge,
LTMPromoter, RelationshipDiscovery``: 1.x's classes open the configured store themselves, so these
names are the thin facade in flows/agents_api.py (the flow's own wiring and agents), loaded on
first use (PEP 562) so that importing an agent module never loads settings or the flow wiring.
"""

from __future__ import annotations

from typing import Any

FACADE = (
    "ClusterDetector",
    "DecayAnalyzer",
    "LTMPromoter",
    "RelationshipDiscovery",
    "Scheduler",
    "SemanticMerge",
)


def __getattr__(name: str) -> Any:
    if name in FACADE:
        from cortexgraph.flows import agents_api

        return getattr(agents_api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *FACADE])


__all__ = list(FACADE)  # pyright: ignore[reportUnsupportedDunderAll]
