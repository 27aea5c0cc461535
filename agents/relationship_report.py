"""What RelationshipDiscovery found in one run: the relations, the memory graph's summary, and
the report's table (agents.relationship_discovery does the finding)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cortexgraph.agents.common import ReportTable, short
from cortexgraph.agents.entity_standing import EntityStanding, standing_json


@dataclass(frozen=True, slots=True)
class DiscoveredRelation:
    from_id: str
    to_id: str
    shared_entities: tuple[str, ...]
    shared_tags: tuple[str, ...]
    strength: float
    confidence: float
    relation_id: str | None = None  # None in a dry run

    @property
    def relation_type(self) -> str:  # 1.x RelationResult names
        return "related"

    @property
    def reasoning(self) -> str:
        return f"shares {', '.join(self.shared_entities) or 'no entities'}" + (
            f" and tags {', '.join(self.shared_tags)}" if self.shared_tags else ""
        )


NOTHING_CHANGED = "no memory changed since the last run: no pair to look at, its graph stands"


@dataclass(frozen=True, slots=True)
class GraphSummary:
    nodes: int
    edges: int
    components: int  # connected components with at least two memories
    largest_component: int
    isolated: int
    most_connected: tuple[tuple[str, int, str], ...]  # (memory id, degree, preview)


@dataclass(frozen=True, slots=True)
class RelationshipReport:
    dry_run: bool
    scanned: int
    candidate_pairs: int
    discovered: tuple[DiscoveredRelation, ...]
    skipped_existing: int
    common_entities_skipped: tuple[str, ...]
    graph: GraphSummary | None  # None: skipped, nothing changed (the last run's graph stands)
    entity_ceiling: int = 0  # entities on more memories than this were left out
    over_cap: int = 0  # qualifying pairs dropped by max_relations_per_memory
    issues_opened: int = 0  # bridges between large components, possible contradictions
    entities_found: int = 0  # memories the entity finder read in this run
    entity_method: str = "none"  # the finder's method ("spacy+rules", "rules") or "none"
    skipped: str = ""  # why nothing was looked at (an incremental run with nothing changed)
    # The entities judged too common and rare (the next incremental run compares: None when
    # skipped); shown as their counts.
    standing: EntityStanding | None = field(default=None, metadata={"to_json": standing_json})

    def table(self) -> ReportTable:
        g = self.graph
        verb = "would add" if self.dry_run else "added"
        if g is None:
            return ReportTable(title="Relationships", summary=self.skipped, columns=(), rows=())
        return ReportTable(
            title="Relationships",
            summary=(
                f"{self.scanned} memories, entities read in {self.entities_found} "
                f"({self.entity_method}); {self.candidate_pairs:,} candidate pairs; {verb} "
                f"{len(self.discovered)}, {self.skipped_existing} already related, "
                f"{self.over_cap} over the per-memory cap; too common (> {self.entity_ceiling}"
                f" memories): {', '.join(self.common_entities_skipped[:5]) or 'none'}"
                f"{' …' if len(self.common_entities_skipped) > 5 else ''}; graph: "
                f"{g.nodes} nodes, {g.edges} edges, {g.components} components (largest "
                f"{g.largest_component}), {g.isolated} isolated; most connected: "
                + (", ".join(f"{short(i)} ({d})" for i, d, _ in g.most_connected) or "none")
            ),
            columns=("from", "to", "shared entities", "strength", "confidence"),
            rows=tuple(
                (
                    short(d.from_id),
                    short(d.to_id),
                    ", ".join(d.shared_entities),
                    f"{d.strength:.3f}",
                    f"{d.confidence:.3f}",
                )
                for d in self.discovered
            ),
        )


__all__ = ["NOTHING_CHANGED", "DiscoveredRelation", "GraphSummary", "RelationshipReport"]
