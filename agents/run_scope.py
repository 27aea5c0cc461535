"""The scope of an incremental consolidation run: what changed since the last run, what
crossed a decay bar by time alone, and what the last run left for this one to look at
(agents.changes.ChangeTracker makes it; agents.pipeline runs the agents over it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cortexgraph.agents.entity_standing import EntityStanding


@dataclass(frozen=True, slots=True)
class RunScope:
    """The memories an incremental run looks at; ``None`` in its place means a full run."""

    since: float  # the last run's clock
    changed: frozenset[str]
    crossing: frozenset[str]
    # Listed fading by the last run and still active (decay counts them in its digests).
    fading: frozenset[str] = frozenset()
    removed: int = 0  # memories gone from the store since
    # The last run's word on its fading memories: (urgency, forget moment) by id
    # (agents.decay_findings.FadingMark; absent in a state from before marks).
    marks: Mapping[str, tuple[str, float]] = field(default_factory=dict)
    # The entities the last run's relations step judged too common and rare (None: not
    # recorded): what an entity's changed standing makes relatable (agents.entity_standing).
    standing: EntityStanding | None = None
    # The last run left no memory its gc would take: gc acted on every one it judged, or
    # none qualified. False (or a state from before): a run whose gc acts scores the fading
    # memories below the forget threshold again (``gc_due``), as its own gc is to act on them.
    gc_settled: bool = False
    # Memories of what the last runs' merge step found and did not merge (previewed, linked,
    # failed): a run in apply mode clusters them again, as a full run would find them.
    unmerged: frozenset[str] = frozenset()
    # The similarity the last cluster step judged by ("tfidf", "embeddings:<model>"; None:
    # not recorded): a run on other vectors judges every pair again (agents.pipeline).
    similarity: str | None = None

    @property
    def ids(self) -> frozenset[str]:
        return self.changed | self.crossing

    @property
    def empty(self) -> bool:
        return not self.changed and not self.crossing and not self.removed

    def gc_due(self, now: float) -> frozenset[str]:
        """The last run's fading memories, outside the scope, below the forget threshold by
        ``now`` (their mark's forget moment has come, or they have no mark): those a run whose
        gc acts must judge when the last run's gc did not act on them (``gc_settled``)."""
        if self.gc_settled:
            return frozenset()
        marks = self.marks
        return frozenset(
            i for i in self.fading - self.ids if (m := marks.get(i)) is None or m[1] <= now
        )

    def describe(self) -> str:
        at = datetime.fromtimestamp(self.since, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        if self.empty:
            return f"incremental: nothing changed since the last run at {at}"
        gone = f", {self.removed} removed" if self.removed else ""
        return (
            f"incremental: {len(self.changed)} changed and {len(self.crossing)} crossing a decay "
            f"bar since the last run at {at}{gone}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "changed": len(self.changed),
            "crossing": len(self.crossing),
            "removed": self.removed,
            "nothing_changed": self.empty,
            "summary": self.describe(),
        }


__all__ = ["RunScope"]
