"""The relations worth a person's look, as ``consolidation:relations`` issues.

Two kinds (agents.relationship_discovery's docstring says why): a new link that joins two
components of at least ``bridge_component_size`` memories, and a possible contradiction, a
related pair worded alike (word Jaccard, numbers aside, at least ``contradiction_min_overlap``)
whose numbers disagree (agents.duplicates). Also the set overlaps the relations step scores by.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from cortexgraph.agents.common import LABEL_RELATIONS, short, snippet
from cortexgraph.agents.duplicates import Details, conflict, numbers_in
from cortexgraph.agents.protocols import IssueTracker
from cortexgraph.agents.relationship_report import DiscoveredRelation
from cortexgraph.storage.models import Memory

if TYPE_CHECKING:
    from cortexgraph.agents.relationship_discovery import RelationshipConfig


def jaccard(a: set[str], b: set[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def weighted_jaccard(a: set[str], b: set[str], weight: Mapping[str, float]) -> float:
    """Jaccard with each element counted by ``weight`` (1.0 when absent)."""
    union = sum(weight.get(x, 1.0) for x in a | b)
    return sum(weight.get(x, 1.0) for x in a & b) / union if union else 0.0


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2}


def open_relation_issues(
    tracker: IssueTracker,
    config: RelationshipConfig,
    found: list[DiscoveredRelation],
    memories: Mapping[str, Memory],
    components: Mapping[str, tuple[int, int]],
) -> int:
    """Open the issues ``found`` (relations just made) calls for; the number opened.
    ``components``: each memory's (component, its size) in the relation graph."""
    bar = config.bridge_component_size
    opened, bridged = 0, set()
    for d in found:
        (ca, na), (cb, nb) = components[d.from_id], components[d.to_id]
        a, b = memories[d.from_id], memories[d.to_id]
        if ca != cb and min(na, nb) >= bar and frozenset((ca, cb)) not in bridged:
            bridged.add(frozenset((ca, cb)))
            _issue(
                tracker,
                d,
                f"New link joins two groups of {na} and {nb} memories",
                f"{short(a.id)} ({snippet(a.content)}) and {short(b.id)} "
                f"({snippet(b.content)}) now link two previously separate groups "
                f"through {d.reasoning}. Check that they belong together.",
                "bridge",
            )
            opened += 1
        alike = jaccard(_words(a.content), _words(b.content))
        why = conflict(
            Details(numbers_in(a.content), frozenset()),
            Details(numbers_in(b.content), frozenset()),
        )
        if why is not None and alike >= config.contradiction_min_overlap:
            _issue(
                tracker,
                d,
                f"Possible contradiction: {short(a.id)} and {short(b.id)}",
                f"These related memories ({d.reasoning}) state different "
                f"details ({why}):\n\n> {a.content[:300]}\n\n> {b.content[:300]}",
                "contradiction",
            )
            opened += 1
    return opened


def _issue(tracker: IssueTracker, d: DiscoveredRelation, title: str, text: str, kind: str) -> None:
    tracker.create(
        title,
        description=text,
        labels=(LABEL_RELATIONS, f"relations:{kind}"),
        priority=3,
        metadata={
            "kind": kind,
            "memory_ids": [d.from_id, d.to_id],
            "relation_id": d.relation_id,
            "strength": d.strength,
        },
        dedupe_key=f"relations:{kind}:{d.from_id}:{d.to_id}",
    )


__all__ = ["jaccard", "open_relation_issues", "weighted_jaccard"]
