"""RelationshipDiscovery: relates memories that share entities (and tags).

    strength   = 0.7 * Jaccard(entities) + 0.3 * Jaccard(tags)
    confidence = 1 - 0.5 ** (shared entities + 0.5 * shared tags)

Candidate pairs come from an entity inverted index (pairs that share at least one entity), not
from all pairs; entities on more than ``max_entity_frequency`` memories are too common to say
two memories are related and are skipped (and counted). A pair that is already related in any
way gets no new relation. The report summarises the memory graph (networkx).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from itertools import combinations

import networkx as nx

from agents.common import ReportTable, short, snippet
from storage.base import MemoryStore
from storage.models import Memory, MemoryStatus, Relation

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RelationshipConfig:
    min_shared_entities: int = 2
    min_confidence: float = 0.5
    max_entity_frequency: int = 200
    entity_weight: float = 0.7
    tag_weight: float = 0.3


@dataclass(frozen=True, slots=True)
class DiscoveredRelation:
    from_id: str
    to_id: str
    shared_entities: tuple[str, ...]
    shared_tags: tuple[str, ...]
    strength: float
    confidence: float
    relation_id: str | None = None  # None in a dry run


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
    graph: GraphSummary

    def table(self) -> ReportTable:
        g = self.graph
        verb = "would add" if self.dry_run else "added"
        return ReportTable(
            title="Relationships",
            summary=(
                f"{self.scanned} memories, {self.candidate_pairs:,} candidate pairs; {verb} "
                f"{len(self.discovered)}, {self.skipped_existing} already related; graph: "
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
            ),  # fmt: skip
        )


def jaccard(a: set[str], b: set[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0


class RelationshipDiscovery:
    name = "relations"

    def __init__(self, store: MemoryStore, config: RelationshipConfig | None = None) -> None:
        self.store = store
        self.config = config or RelationshipConfig()

    def score(self, a: Memory, b: Memory) -> DiscoveredRelation:
        ea, eb = {e.lower() for e in a.entities}, {e.lower() for e in b.entities}
        ta, tb = {t.lower() for t in a.tags}, {t.lower() for t in b.tags}
        shared_e, shared_t = ea & eb, ta & tb
        cfg = self.config
        strength = cfg.entity_weight * jaccard(ea, eb) + cfg.tag_weight * jaccard(ta, tb)
        confidence = 1.0 - 0.5 ** (len(shared_e) + 0.5 * len(shared_t))
        first, second = sorted((a, b), key=lambda m: (m.created_at, m.id))
        return DiscoveredRelation(first.id, second.id, tuple(sorted(shared_e)),
                                  tuple(sorted(shared_t)), round(min(1.0, strength), 4),
                                  round(confidence, 4))  # fmt: skip

    def run(self, *, now: float, dry_run: bool = False) -> RelationshipReport:
        cfg = self.config
        memories = {m.id: m for m in self.store.list() if m.status is not MemoryStatus.ARCHIVED}
        postings: dict[str, list[str]] = {}
        for m in memories.values():
            for e in {e.lower() for e in m.entities}:
                postings.setdefault(e, []).append(m.id)
        common = tuple(sorted(e for e, ids in postings.items()
                              if len(ids) > cfg.max_entity_frequency))  # fmt: skip
        shared: Counter[tuple[str, str]] = Counter()
        for ids in postings.values():
            if len(ids) > cfg.max_entity_frequency:
                continue
            shared.update(combinations(sorted(ids), 2))
        existing = {frozenset((r.from_memory_id, r.to_memory_id)) for r in self.store.relations()}
        found: list[DiscoveredRelation] = []
        skipped = 0
        for (a, b), count in shared.items():
            if count < cfg.min_shared_entities:
                continue
            d = self.score(memories[a], memories[b])
            if d.confidence < cfg.min_confidence:
                continue
            if frozenset((a, b)) in existing:
                skipped += 1
                continue
            found.append(d)
        found.sort(key=lambda d: (-d.strength, d.from_id, d.to_id))
        if not dry_run:
            found = [self._create(d, now) for d in found]
        graph = self._graph(memories, found)
        log.info("relations: %d candidate pairs, %d %s, %d already related", len(shared),
                 len(found), "would be added" if dry_run else "added", skipped)  # fmt: skip
        return RelationshipReport(dry_run, len(memories), len(shared), tuple(found), skipped,
                                  common, graph)  # fmt: skip

    def _create(self, d: DiscoveredRelation, now: float) -> DiscoveredRelation:
        from dataclasses import replace

        rel = self.store.add_relation(
            d.from_id, d.to_id, "related", strength=d.strength, now=now,
            metadata={"discovered_by": "relationship-discovery", "confidence": d.confidence,
                      "shared_entities": list(d.shared_entities)},
        )  # fmt: skip
        return replace(d, relation_id=rel.id)

    def _graph(self, memories: dict[str, Memory], new: list[DiscoveredRelation]) -> GraphSummary:
        g = nx.Graph()
        g.add_nodes_from(memories)
        rels: list[Relation] = self.store.relations()
        g.add_edges_from(
            (r.from_memory_id, r.to_memory_id)
            for r in rels
            if r.from_memory_id in memories and r.to_memory_id in memories
        )
        g.add_edges_from((d.from_id, d.to_id) for d in new)  # fmt: skip
        sizes = [len(c) for c in nx.connected_components(g) if len(c) > 1]
        top = sorted(((n, d) for n, d in g.degree() if d > 0), key=lambda nd: (-nd[1], nd[0]))[:5]
        return GraphSummary(
            nodes=g.number_of_nodes(),
            edges=g.number_of_edges(),
            components=len(sizes),
            largest_component=max(sizes, default=0),
            isolated=nx.number_of_isolates(g),
            most_connected=tuple((n, d, snippet(memories[n].content, 40)) for n, d in top),
        )


__all__ = ["DiscoveredRelation", "GraphSummary", "RelationshipConfig", "RelationshipDiscovery",
           "RelationshipReport", "jaccard"]  # fmt: skip
