"""RelationshipDiscovery: relates memories that share informative entities (and tags).

    strength   = 0.7 * wJaccard(informative entities) + 0.3 * Jaccard(tags)
    confidence = 1 - 0.5 ** (shared informative entities + 0.5 * shared tags)

An entity on a large share of the store (the user's own name, the main project) says little
about whether two memories belong together: on the demo set "sam" and "billing-service" alone
made 1,700 edges and one 234-memory component. So entities whose document frequency exceeds
the ceiling (``max_entity_share`` of the store, at least ``min_entity_ceiling`` memories, at most
``max_entity_frequency``) are left out of candidate generation and of the formula, and the
Jaccard over the rest weights each entity by its IDF, log(N / df): sharing a rare name counts
for more than sharing a common one. Each memory keeps at most ``max_relations_per_memory``
``related`` edges, the strongest first, counting those earlier runs made. A pair that is already
related in any way gets no new relation. The report summarises the memory graph (a union-find, no networkx).

Entities first (``entity_finder``): memories no finder has read yet are read in one batch and
what it finds joins their entities or mentions (agents.entity_reading, the step on its own).

Pairs come from shared entities: every pair for an entity on at most ``all_pairs_max_df``
memories, and for a more common one each memory with its ``entity_neighbours`` nearest in time
(one earlier, one a day or more earlier: the same person or thing across sessions), so an entity
on n memories makes O(n) pairs, not O(n^2). A pair needs ``min_shared_entities`` informative
entities, or one rare entity (on at most ``rare_entity_max_df`` memories and
``rare_entity_max_share`` of the store) that is much of what the two name (IDF-weighted
Jaccard >= ``rare_entity_min_jaccard``): two turns weeks apart that name the same pet belong
together even when nothing else is shared; two notes naming six things and sharing one do not.

Relations worth a person's look become ``consolidation:relations`` issues (live runs with a
tracker): a new link that joins two components of at least ``bridge_component_size`` memories,
and a possible contradiction: a related pair worded alike (word Jaccard, numbers aside, at least
``contradiction_min_overlap``) whose numbers disagree (agents.duplicates). Related memories often
state different numbers about different things; only near-identical wording makes it suspect.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from itertools import combinations

from cortexgraph.agents.chain_gaps import closed_gaps, left_departures, left_ids
from cortexgraph.agents.entity_postings import EntityPostings, memory_names
from cortexgraph.agents.entity_reading import FOUND_KEY, EntityFinder, find_entities
from cortexgraph.agents.entity_standing import (
    EntityStanding,
    dropped_departures,
    moved_members,
)
from cortexgraph.agents.protocols import IssueTracker
from cortexgraph.agents.relation_graph import graph_summary, relation_graph
from cortexgraph.agents.relationship_issues import (
    jaccard,
    open_relation_issues,
    weighted_jaccard,
)
from cortexgraph.agents.relationship_report import (
    NOTHING_CHANGED,
    DiscoveredRelation,
    GraphSummary,
    RelationshipReport,
)
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore

log = logging.getLogger(__name__)

DAY = 86_400


@dataclass(frozen=True, slots=True)
class RelationshipConfig:
    min_shared_entities: int = 2  # informative entities
    min_confidence: float = 0.5
    max_entity_frequency: int = 200  # hard ceiling, and bounds the pairs one entity can make
    max_entity_share: float = 0.08  # ceiling as a share of the store's memories ...
    min_entity_ceiling: int = 20  # ... but never below this many (small stores)
    max_relations_per_memory: int = 5
    entity_weight: float = 0.7
    tag_weight: float = 0.3
    bridge_component_size: int = 5  # a link joining two components this large gets an issue
    contradiction_min_overlap: float = 0.5
    open_issues: bool = True
    rare_entity_max_df: int = 12  # one shared entity relates two memories if this rare ...
    rare_entity_max_share: float = 0.05  # ... and on at most this share of the store
    rare_entity_min_jaccard: float = 0.35  # ... and it is much of what the two name (IDF)
    all_pairs_max_df: int = 8  # an entity on more memories pairs each with its nearest in time
    entity_neighbours: int = 2  # (one earlier, one a day or more earlier)
    entity_batch_limit: int = 2_000  # memories the finder reads per run, newest first

    def entity_ceiling(self, memories: int) -> int:
        """Entities on more memories than this are too common to relate two of them."""
        share = int(self.max_entity_share * memories)
        return min(self.max_entity_frequency, max(self.min_entity_ceiling, share))


class RelationshipDiscovery:
    name = "relations"

    def __init__(
        self,
        store: MemoryStore,
        config: RelationshipConfig | None = None,
        tracker: IssueTracker | None = None,
        entity_finder: EntityFinder | None = None,
    ) -> None:
        self.store = store
        self.config = config or RelationshipConfig()
        self.tracker = tracker
        self.entity_finder = entity_finder
        # What read_entities read before this run's steps, for the run's report.
        self._read_before: tuple[int, str] = (0, "none")
        # The entity step's last batch was full: memories may wait unread for the next run.
        self.backlog = False
        # The records read_entities found read, by id (agents.entity_reading.find_entities).
        self._read: Mapping[str, Memory] = {}

    def score(
        self,
        a: Memory,
        b: Memory,
        *,
        idf: Mapping[str, float] | None = None,
        common: frozenset[str] = frozenset(),
    ) -> DiscoveredRelation:
        """The formula over the entities not in ``common``, weighted by ``idf`` when given."""
        ea, eb = memory_names(a) - common, memory_names(b) - common
        ta, tb = {t.lower() for t in a.tags}, {t.lower() for t in b.tags}
        shared_e, shared_t = ea & eb, ta & tb
        cfg = self.config
        strength = cfg.entity_weight * weighted_jaccard(ea, eb, idf or {}) + (
            cfg.tag_weight * jaccard(ta, tb)
        )
        confidence = 1.0 - 0.5 ** (len(shared_e) + 0.5 * len(shared_t))
        first, second = sorted((a, b), key=lambda m: (m.created_at, m.id))
        return DiscoveredRelation(
            first.id,
            second.id,
            tuple(sorted(shared_e)),
            tuple(sorted(shared_t)),
            round(min(1.0, strength), 4),
            round(confidence, 4),
        )

    def run(
        self,
        *,
        now: float,
        dry_run: bool = False,
        scope: Collection[str] | None = None,
        standing: EntityStanding | None = None,
    ) -> RelationshipReport:
        """``scope`` (an incremental run): only pairs that hold a changed memory, found
        through the changed memories' entities, and those an entity's changed standing since
        the last run's (``standing``, None: not known) makes relatable
        (agents.entity_standing)."""
        cfg = self.config
        read_before, self._read_before = self._read_before, (0, "none")
        read, self._read = self._read, {}
        if scope is not None and not scope:
            # Every pair must hold a changed memory: none can. Entities were read before the
            # cluster step (read_entities); the postings and graph of every memory (1-2 s at
            # 100k) would only be summarised again as the last run left them.
            return RelationshipReport(dry_run, 0, 0, (), 0, (), None, skipped=NOTHING_CHANGED)
        memories = {m.id: m for m in self.store.list() if m.status is not MemoryStatus.ARCHIVED}
        found_count, method = self._find_entities(memories, dry_run, read)
        if read_before[0]:  # read before the cluster step (read_entities): this run read them
            found_count, method = found_count + read_before[0], read_before[1]
        # Each memory's names once (each was read two or three times: 0.05 s at 10k); an
        # incremental run makes them only for the memories it asks about.
        index = EntityPostings.of(memories, lazy=scope is not None)
        names, postings = index.names, index.postings
        ceiling = cfg.entity_ceiling(len(memories))
        common = frozenset(e for e, ids in postings.items() if len(ids) > ceiling)
        n = max(1, len(memories))
        idf = {e: math.log(n / len(ids)) + 1.0 for e, ids in postings.items() if e not in common}
        rare = frozenset(
            e
            for e, ids in postings.items()
            if len(ids) <= cfg.rare_entity_max_df and len(ids) <= cfg.rare_entity_max_share * n
        )
        judged = EntityStanding(common, rare)
        looked: Collection[str] | None = scope
        if scope is not None and standing is not None:
            looked = set(scope) | moved_members(standing, judged, postings)
        # A pair holding a changed memory shares one of its entities: only those are paired.
        wanted = (
            postings.keys() - common
            if looked is None
            else set().union(*(names[i] for i in looked if i in names)) - common
        )
        # Whether a memory can pair: asked only of those a wanted entity reaches when they are
        # few (after one save at 100k, 131 of 83k memories); past an eighth of the memories
        # the set of all is cheaper (67k reached after 1,000 saves: 68 ms asked one by one,
        # 19 ms as the set).
        least = cfg.min_shared_entities
        few = looked is not None and sum(len(postings[e]) for e in wanted) < len(names) // 8
        can_pair = (
            index.reached(common, least) if few else index.eligible(common, least).__contains__
        )
        pairs: set[tuple[str, str]] = set()
        for e in wanted:
            ids = postings[e]
            members = ids if e in rare else [i for i in ids if can_pair(i)]
            near = self._pairs(e, members, memories)
            if looked is not None:
                near = [p for p in near if p[0] in looked or p[1] in looked]
            pairs.update(near)
        if scope is not None:
            # Two unchanged memories that a memory's leaving made neighbours in an entity's
            # time chain: a full run pairs them (agents.chain_gaps); so does a memory that can
            # no longer pair (agents.entity_standing).
            left = self.store.find_many(sorted(left_ids(scope, memories)))
            departures = left_departures(left, postings, common)
            if standing is not None:
                dropped = dropped_departures(standing, judged, postings, names, can_pair, least)
                for e, ids in dropped.items():
                    departures.setdefault(e, []).extend(memories[i] for i in ids)
            pairs |= closed_gaps(departures, memories, postings, rare, can_pair, self._pairs)
        shared: Counter[tuple[str, str]] = Counter()
        single: set[tuple[str, str]] = set()
        for a, b in pairs:
            both = (names[a] & names[b]) - common
            shared[(a, b)] = len(both)
            if both & rare:
                single.add((a, b))
        relations = self.store.relations()
        # One whole-store graph a run: its components before this run's links are what the
        # bridge issues compare; the report summarises it with them. Both memories of a pair
        # are in it, so a pair related in any way already is one of its edges.
        store_graph = relation_graph(memories, relations)
        candidates: list[DiscoveredRelation] = []
        skipped = 0
        for (a, b), count in shared.items():
            if count < cfg.min_shared_entities and (a, b) not in single:
                continue
            ea, eb = names[a] - common, names[b] - common
            if (
                count < cfg.min_shared_entities
                and weighted_jaccard(ea, eb, idf) < cfg.rare_entity_min_jaccard
            ):
                continue  # one shared name among many says little
            d = self.score(memories[a], memories[b], idf=idf, common=common)
            if d.confidence < cfg.min_confidence:
                continue
            if store_graph.linked(a, b):
                skipped += 1
                continue
            candidates.append(d)
        candidates.sort(key=lambda d: (-d.strength, -d.confidence, d.from_id, d.to_id))
        # Each memory's ``related`` edges so far (a loop counts twice), for the cap.
        degree = Counter(
            end
            for r in (relations if candidates else ())
            if r.relation_type == "related"
            for end in (r.from_memory_id, r.to_memory_id)
        )
        found: list[DiscoveredRelation] = []
        for d in candidates:  # strongest first, so each memory keeps its best k
            cap = cfg.max_relations_per_memory
            if degree[d.from_id] >= cap or degree[d.to_id] >= cap:
                continue
            degree.update((d.from_id, d.to_id))
            found.append(d)
        opened = 0
        if not dry_run and found:
            wants_issues = self.tracker is not None and cfg.open_issues
            components = store_graph.components() if wants_issues else {}
            found = [self._create(d, now) for d in found]
            if wants_issues:
                assert self.tracker is not None
                opened = open_relation_issues(self.tracker, cfg, found, memories, components)
        graph = graph_summary(store_graph, memories, found)
        log.info(
            "relations: %d candidate pairs, %d %s, %d already related, %d over the cap",
            len(shared),
            len(found),
            "would be added" if dry_run else "added",
            skipped,
            len(candidates) - len(found),
        )
        return RelationshipReport(
            dry_run,
            len(memories),
            len(shared),
            tuple(found),
            skipped,
            tuple(sorted(common)),
            graph,
            ceiling,
            len(candidates) - len(found),
            opened,
            found_count,
            method,
            standing=judged,
        )

    def read_entities(self) -> tuple[int, str]:
        """The entity step alone, written back; a live run calls it before clustering, so the
        merge's names rule and this run's relations see the same entities and the next run
        finds nothing changed. Returns (memories read, the finder's method)."""
        memories = {m.id: m for m in self.store.list() if m.status is not MemoryStatus.ARCHIVED}
        self._read_before = self._find_entities(memories, dry_run=False)
        # Under the batch limit nothing was left unread: the run's entity step looks only at
        # records that are not these (the merge's, others' saves), not at 6.6k again at 10k.
        below = self._read_before[0] < self.config.entity_batch_limit
        self._read = memories if below else {}
        return self._read_before

    def _find_entities(
        self, memories: dict[str, Memory], dry_run: bool, read: Mapping[str, Memory] | None = None
    ) -> tuple[int, str]:
        """The entity step (agents.entity_reading) with this agent's finder and batch limit."""
        found = find_entities(
            self.store,
            memories,
            self.entity_finder,
            limit=self.config.entity_batch_limit,
            dry_run=dry_run,
            read=read,
        )
        self.backlog = found[0] >= self.config.entity_batch_limit
        return found

    def _pairs(
        self, entity: str, ids: list[str], memories: Mapping[str, Memory]
    ) -> Iterable[tuple[str, str]]:
        """Every pair for a rare entity; for a common one, each memory with its nearest in time
        (the one just before, and the nearest a day or more before: another session)."""
        ordered = sorted(ids, key=lambda i: (memories[i].created_at, i))
        cfg = self.config
        if len(ordered) <= cfg.all_pairs_max_df:
            yield from combinations(sorted(ordered), 2)
            return
        times = [memories[i].created_at for i in ordered]
        for k in range(1, len(ordered)):
            chosen = [k - 1]
            if cfg.entity_neighbours > 1:
                j = k - 1
                while j >= 0 and times[k] - times[j] < DAY:
                    j -= 1
                if j >= 0 and j != k - 1:
                    chosen.append(j)
            for j in chosen:
                a, b = ordered[j], ordered[k]
                yield (a, b) if a < b else (b, a)

    def _create(self, d: DiscoveredRelation, now: float) -> DiscoveredRelation:
        rel = self.store.add_relation(
            d.from_id,
            d.to_id,
            "related",
            strength=d.strength,
            now=now,
            metadata={
                "discovered_by": "relationship-discovery",
                "confidence": d.confidence,
                "shared_entities": list(d.shared_entities),
            },
        )
        return replace(d, relation_id=rel.id)


__all__ = [
    "FOUND_KEY",
    "DiscoveredRelation",
    "EntityFinder",
    "GraphSummary",
    "RelationshipConfig",
    "RelationshipDiscovery",
    "RelationshipReport",
    "jaccard",
    "weighted_jaccard",
]
