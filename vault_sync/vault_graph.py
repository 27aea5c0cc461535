"""The vault as a graph: notes linked by wikilinks, plus STM memories linked by relations."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import networkx as nx

from cortexgraph.storage.models import Memory, MemoryStatus, Relation
from cortexgraph.vault_sync.ltm_index import LTMIndex


def build_graph(
    index: LTMIndex | None,
    memories: Iterable[Memory] = (),
    relations: Iterable[Relation] = (),
) -> nx.DiGraph[str]:
    """Nodes ``note:<path>`` (kind note/missing) and ``memory:<id>``; a promoted memory is drawn
    as its note. Edges carry ``kind`` (wikilink or the relation type)."""
    g: nx.DiGraph[str] = nx.DiGraph()
    note_of: dict[str, str] = {}
    if index is not None:
        for r in index.notes.values():
            g.add_node(f"note:{r.path}", label=r.title, kind="note", tags=list(r.tags))
            if r.memory_id and r.conflict_of is None:
                note_of[r.memory_id] = f"note:{r.path}"
        for r in index.notes.values():
            for link in r.wikilinks:
                target = index.resolve_link(link)
                node = f"note:{target.path}" if target else f"missing:{link}"
                if target is None:
                    g.add_node(node, label=link, kind="missing")
                g.add_edge(f"note:{r.path}", node, kind="wikilink")
    for m in memories:
        if m.status == MemoryStatus.ARCHIVED:
            continue
        if m.id in note_of:
            continue
        label = m.content.split("\n", 1)[0][:40]
        g.add_node(f"memory:{m.id}", label=label, kind="memory", strength=m.strength)
    for rel in relations:
        a = note_of.get(rel.from_memory_id, f"memory:{rel.from_memory_id}")
        b = note_of.get(rel.to_memory_id, f"memory:{rel.to_memory_id}")
        if a in g and b in g and a != b:
            g.add_edge(a, b, kind=rel.relation_type, strength=rel.strength)
    return g


def trim_graph(
    g: nx.DiGraph[str], *, max_nodes: int = 400, isolated: bool = False
) -> nx.DiGraph[str]:
    """What `cortexgraph graph` and the web view draw: without unlinked nodes (unless
    ``isolated``), and at most ``max_nodes``, the best connected."""
    if not isolated:
        g = g.copy()
        g.remove_nodes_from(list(nx.isolates(g)))
    if g.number_of_nodes() > max_nodes:
        keep = sorted(g.degree, key=lambda nd: (-nd[1], nd[0]))[:max_nodes]
        g = g.subgraph(n for n, _ in keep).copy()
    return g


def layout(g: nx.DiGraph[str]) -> dict[str, Any]:
    """Node positions (a seeded spring layout: the same picture every time)."""
    return nx.spring_layout(g, seed=7, k=None if len(g) < 50 else 1.5 / len(g) ** 0.5)


__all__ = ["build_graph", "layout", "trim_graph"]
