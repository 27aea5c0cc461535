"""The memory graph as the relations report and its bridge issues read it: a union-find of
components over the store's relations, with no networkx (agents.relationship_discovery)."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable

from cortexgraph.agents.common import snippet
from cortexgraph.agents.relationship_report import DiscoveredRelation, GraphSummary
from cortexgraph.storage.models import Memory, Relation


def graph_summary(
    g: RelationGraph, memories: dict[str, Memory], new: list[DiscoveredRelation]
) -> GraphSummary:
    """``g`` (the store's relations among ``memories``) with this run's ``new`` ones added."""
    for d in new:
        g.add(d.from_id, d.to_id)
    sizes = sorted(n for n in g.component_sizes() if n > 1)
    degree = g.degree()
    top = heapq.nsmallest(5, degree.items(), key=lambda nd: (-nd[1], nd[0]))
    return GraphSummary(
        nodes=len(memories),
        edges=len(g.edges),
        components=len(sizes),
        largest_component=max(sizes, default=0),
        isolated=len(memories) - len(degree),
        most_connected=tuple((n, d, snippet(memories[n].content, 40)) for n, d in top),
    )


def relation_graph(memories: dict[str, Memory], relations: list[Relation]) -> RelationGraph:
    g = RelationGraph(memories)
    for r in relations:
        if r.from_memory_id in memories and r.to_memory_id in memories:
            g.add(r.from_memory_id, r.to_memory_id)
    return g


class RelationGraph:
    """The relation graph as the report and the bridge issues read it (networkx's simple
    graph: each undirected edge once, a loop counts twice in its node's degree), kept as
    edges and a union-find of components. Building networkx graphs of the whole store cost
    ~1 s each at 100k memories, twice a run, a run after no change too."""

    def __init__(self, nodes: Iterable[str]) -> None:
        self._parent = {n: n for n in nodes}
        self._size = dict.fromkeys(self._parent, 1)
        self.edges: set[tuple[str, str]] = set()

    def add(self, a: str, b: str) -> None:
        edge = (a, b) if a <= b else (b, a)
        if edge in self.edges:
            return
        self.edges.add(edge)
        for n in edge:
            if n not in self._parent:
                self._parent[n], self._size[n] = n, 1
        ra, rb = self._root(a), self._root(b)
        if ra != rb:
            if self._size[ra] < self._size[rb]:
                ra, rb = rb, ra
            self._parent[rb] = ra
            self._size[ra] += self._size[rb]

    def linked(self, a: str, b: str) -> bool:
        """Whether ``a`` and ``b`` share an edge."""
        return ((a, b) if a <= b else (b, a)) in self.edges

    def _root(self, n: str) -> str:
        parent = self._parent
        while parent[n] != n:
            parent[n] = parent[parent[n]]  # path halving
            n = parent[n]
        return n

    def components(self) -> dict[str, tuple[int, int]]:
        """node -> (component id, component size)."""
        ids: dict[str, int] = {}
        out: dict[str, tuple[int, int]] = {}
        for n in self._parent:
            root = self._root(n)
            out[n] = (ids.setdefault(root, len(ids)), self._size[root])
        return out

    def component_sizes(self) -> list[int]:
        """Each component's size (its root's): ``components`` without a root found for
        every node (the report's summary reads only the sizes, of the whole store)."""
        size = self._size
        return [size[n] for n, parent in self._parent.items() if parent == n]

    def degree(self) -> Counter[str]:
        """Nodes with at least one edge -> their degree."""
        degree: Counter[str] = Counter()
        for a, b in self.edges:
            degree[a] += 1
            degree[b] += 1
        return degree


__all__ = ["RelationGraph", "graph_summary", "relation_graph"]
