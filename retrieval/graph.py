"""graph_query: the memories, notes and relations around an entity, as compact triples.

The graph is grown breadth-first from the entity, never built whole: memories that name the
entity, vault notes titled or tagged with it, then memory relations, co-mentioned entities,
wikilinks and backlinks. ``depth`` counts hops beyond the entity's own memories and notes;
further nodes are not added, edges between nodes already in the graph are. ``max_nodes`` and ``max_fanout`` bound the work on hub entities.

Node refs: ``e:<entity>``, ``m:<memory id prefix>``, ``n:<note path>``.

The entity is matched as the extractors write it (activation.entities.normalise_entity: lower
case, no possessive, no punctuation outside a word), so "Acme Corp." finds "acme corp". A name
no memory lists among its entities yet (saved since the last consolidation run, whose batch
step reads the entities of new memories) is found in the memories' text: the store's lexical
search proposes candidates and a whole-word match confirms each.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.indexed_store import IndexedStore
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.save_order import newest_first
from cortexgraph.vault_sync.entity_notes import entity_name

MAX_DEPTH = 3
SHORT_ID = 8
LABEL_CHARS = 80
_WORDS = re.compile(r"[\w][\w'.+#-]*")
TEXT_MATCH_CANDIDATES = 200  # lexical candidates checked for a whole-word mention


def memories_naming(store: IndexedStore, name: str, limit: int) -> list[Memory]:
    """Active memories whose text names ``name`` as a whole word (any case), newest first."""
    words = [re.escape(w) for w in name.split()]
    if not words:
        return []
    pattern = re.compile(r"(?<!\w)" + r"\W+".join(words) + r"(?!\w)", re.IGNORECASE)
    hits = store.search(name, top_k=TEXT_MATCH_CANDIDATES, status=None, use_embeddings=False)
    found = [
        r.memory
        for r in hits
        if r.memory.status != MemoryStatus.ARCHIVED and pattern.search(r.memory.content)
    ]
    return newest_first(store, found)[:limit]


@dataclass(frozen=True, slots=True)
class Triple:
    subject: str  # a node ref
    predicate: str
    object: str
    strength: float = 1.0


@dataclass(frozen=True, slots=True)
class GraphQueryResult:
    entity: str
    depth: int
    triples: tuple[Triple, ...]
    labels: dict[str, str] = field(default_factory=dict)  # node ref -> short label
    memory_ids: dict[str, str] = field(default_factory=dict)  # node ref -> full memory id
    truncated: bool = False
    found: bool = True

    def text(self) -> str:
        """Node labels once, then one ``subject predicate object`` line per triple."""
        if not self.found:
            return f"entity: {self.entity} (no memories or notes)"
        used = {r for t in self.triples for r in (t.subject, t.object)}
        lines = [
            f"entity: {self.entity} (depth {self.depth}, {len(self.triples)} triples"
            f"{', truncated' if self.truncated else ''})"
        ]
        labelled = [r for r in self.labels if r in used and not r.startswith("e:")]
        if labelled:
            lines.append("nodes:")
            lines += [f"{r} {self.labels[r]}" for r in labelled]
        lines.append("triples:")
        lines += [f"{t.subject} {t.predicate} {t.object}" for t in self.triples]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "entity": self.entity,
            "depth": self.depth,
            "found": self.found,
            "truncated": self.truncated,
            "nodes": {r: self.labels[r] for r in self.labels},
            "memory_ids": dict(self.memory_ids),
            "triples": [[t.subject, t.predicate, t.object] for t in self.triples],
        }


def memory_ref(memory_id: str) -> str:
    return f"m:{memory_id[:SHORT_ID]}"


def memory_label(memory: Memory) -> str:
    first = " ".join(memory.content.split())
    label = first if len(first) <= LABEL_CHARS else first[: LABEL_CHARS - 1] + "…"
    if memory.meta.extra.get("superseded_by") or memory.meta.extra.get("deprecated"):
        label += " (superseded)"
    return label


def predicate_of(relation: Any) -> str:
    kind = relation.metadata.get("kind") if relation.metadata else None
    return str(kind) if kind else relation.relation_type


def entities_in_text(store: IndexedStore, text: str, ltm_index: Any = None) -> list[str]:
    """Entities the text names (1-3 word phrases) that the store or vault knows, longest first."""
    tokens = [t.strip("'.-").removesuffix("'s") for t in _WORDS.findall(text.lower())]
    tokens = [t for t in tokens if t]
    found: list[str] = []
    for n in (3, 2, 1):
        for i in range(len(tokens) - n + 1):
            phrase = " ".join(tokens[i : i + n])
            if any(f" {phrase} " in f" {f} " for f in found):
                continue  # part of a longer entity already found
            known = bool(store.ids_with_entity(phrase))
            if not known and ltm_index is not None and len(phrase) > 3:
                known = _note_named(ltm_index, phrase) is not None
            if known:
                found.append(phrase)
    return found


def _note_named(index: Any, name: str) -> Any:
    note = index.resolve_link(name)
    return note if note is not None and note.name.lower() == name.lower() else None


class _Builder:
    def __init__(
        self, store: IndexedStore, index: Any, relation: str | None, max_nodes: int, max_fanout: int
    ) -> None:
        self.store, self.index, self.relation = store, index, relation
        self.max_nodes, self.max_fanout = max_nodes, max_fanout
        import networkx as nx  # on first query: the server starts without it

        self.g: nx.MultiDiGraph[str] = nx.MultiDiGraph()
        self.truncated = False
        self.memories: dict[str, Memory] = {}
        self.root = ""

    def add_node(self, ref: str, label: str, **attrs: Any) -> bool:
        if ref in self.g:
            return True
        if self.g.number_of_nodes() >= self.max_nodes:
            self.truncated = True
            return False
        self.g.add_node(ref, label=label, **attrs)
        return True

    def edge(self, a: str, predicate: str, b: str, strength: float = 1.0) -> None:
        if a in self.g and b in self.g and not self.g.has_edge(a, b, key=predicate):
            self.g.add_edge(a, b, key=predicate, strength=strength)

    def memory_node(self, memory: Memory) -> str | None:
        ref = memory_ref(memory.id)
        self.memories[ref] = memory
        return (
            ref if self.add_node(ref, memory_label(memory), kind="memory", id=memory.id) else None
        )

    def note_node(self, note: Any) -> str | None:
        ref = f"n:{note.path}"
        return ref if self.add_node(ref, note.title, kind="note") else None

    def neighbours(self, ref: str, grow: bool) -> list[str]:
        """Nodes adjacent to ``ref``; new nodes are added only when ``grow``."""
        kind = self.g.nodes[ref].get("kind")
        out: list[tuple[str, str, str, float]] = []  # (a, predicate, b, strength)
        if kind == "entity":
            out += self._entity_edges(ref, grow)
        elif kind == "memory":
            out += self._memory_edges(ref, grow)
        elif kind == "note":
            out += self._note_edges(ref, grow)
        reached = []
        for a, predicate, b, strength in out:
            if a in self.g and b in self.g:
                self.edge(a, predicate, b, strength)
                reached.append(b if a == ref else a)
        return reached

    def _follow(self, predicate: str) -> bool:
        return self.relation is None or predicate == self.relation

    def _entity_edges(self, ref: str, grow: bool) -> list[tuple[str, str, str, float]]:
        name = ref[2:]
        ids = self.store.ids_with_entity(name)
        memories = [
            m
            for i in ids
            if (m := self.store.find(i)) is not None and m.status != MemoryStatus.ARCHIVED
        ]
        if not memories and self.root == ref:  # not extracted yet: the text names it
            memories = memories_naming(self.store, name, self.max_fanout + 1)
        memories = newest_first(self.store, memories)
        if len(memories) > self.max_fanout:
            self.truncated = True
        out = []
        for m in memories[: self.max_fanout]:
            mref = self.memory_node(m) if grow else memory_ref(m.id)
            if mref:
                out.append((mref, "mentions", ref, 1.0))
        if self.index is not None:
            note = _note_named(self.index, name)
            tagged = [
                n
                for n in self.index.notes.values()
                if any(t.lower() == name or t.lower().endswith("/" + name) for t in n.tags)
            ]
            for n in ([note] if note is not None else []) + tagged[: self.max_fanout]:
                nref = self.note_node(n) if grow else f"n:{n.path}"
                if nref:
                    out.append((nref, "about" if n is note else "tagged", ref, 1.0))
        return out

    def _memory_edges(self, ref: str, grow: bool) -> list[tuple[str, str, str, float]]:
        memory = self.memories[ref]
        out = []
        for rel in self.store.relations(memory.id)[: self.max_fanout * 2]:
            predicate = predicate_of(rel)
            if not self._follow(predicate):
                continue
            other_id = rel.to_memory_id if rel.from_memory_id == memory.id else rel.from_memory_id
            other = self.store.find(other_id)
            if other is None:
                continue
            oref = self.memory_node(other) if grow else memory_ref(other.id)
            if oref:
                a, b = (ref, oref) if rel.from_memory_id == memory.id else (oref, ref)
                out.append((a, predicate, b, rel.strength))
        if self._follow("mentions"):
            for entity in dict.fromkeys((*memory.entities, *memory.mentions)):
                eref = f"e:{entity.lower()}"
                if grow:
                    self.add_node(eref, entity.lower(), kind="entity")
                out.append((ref, "mentions", eref, 1.0))
        if self.index is not None and self._follow("promoted_to"):
            note = self.index.by_memory_id(memory.id)
            if note is not None:
                nref = self.note_node(note) if grow else f"n:{note.path}"
                if nref:
                    out.append((ref, "promoted_to", nref, 1.0))
        return out

    def _note_edges(self, ref: str, grow: bool) -> list[tuple[str, str, str, float]]:
        if not self._follow("links_to"):
            return []
        note = self.index.get(ref[2:])
        if note is None:
            return []
        out = []
        for link in note.wikilinks[: self.max_fanout]:
            target = self.index.resolve_link(link)
            if target is not None and target.path != note.path:
                tref = self.note_node(target) if grow else f"n:{target.path}"
                if tref:
                    out.append((ref, "links_to", tref, 1.0))
        for path in self.index.backlinks(note.path)[: self.max_fanout]:
            source = self.index.get(path)
            if source is not None:
                sref = self.note_node(source) if grow else f"n:{path}"
                if sref:
                    out.append((sref, "links_to", ref, 1.0))
        return out


def graph_query(
    store: IndexedStore,
    entity: str,
    *,
    relation: str | None = None,
    depth: int = 1,
    ltm_index: Any = None,
    max_nodes: int = 60,
    max_fanout: int = 25,
    max_triples: int = 100,
) -> GraphQueryResult:
    """The entity's memories and notes, and what lies within ``depth`` (1-3) relation, link or
    shared-entity hops of them; ``relation`` keeps one predicate."""
    if not isinstance(entity, str) or not entity.strip():
        raise InvalidInputError("entity must be a non-empty string, e.g. 'postgres' or 'alice'")
    if not 1 <= depth <= MAX_DEPTH:
        raise InvalidInputError(f"depth must be between 1 and {MAX_DEPTH}, got {depth}")
    name = entity_name(entity) or " ".join(entity.strip().lower().split())
    b = _Builder(store, ltm_index, relation, max_nodes, max_fanout)
    root = b.root = f"e:{name}"
    b.add_node(root, name, kind="entity")
    distance = {root: -1}  # the entity's own memories and notes are hop 0
    queue = deque([root])
    while queue:
        ref = queue.popleft()
        grow = distance[ref] < depth
        for other in b.neighbours(ref, grow):
            if other not in distance:
                distance[other] = distance[ref] + 1
                if distance[other] <= depth:
                    queue.append(other)
    found = b.g.number_of_nodes() > 1
    edges = sorted(
        b.g.edges(keys=True, data=True),
        key=lambda e: (
            max(distance.get(e[0], 9), distance.get(e[1], 9)),
            e[2] == "mentions",
            e[0],
            e[2],
            e[1],
        ),
    )
    truncated = b.truncated or len(edges) > max_triples
    triples = tuple(Triple(a, k, c, d.get("strength", 1.0)) for a, c, k, d in edges[:max_triples])
    labels = {n: d.get("label", n) for n, d in b.g.nodes(data=True)}
    ids = {n: d["id"] for n, d in b.g.nodes(data=True) if d.get("kind") == "memory"}
    return GraphQueryResult(name, depth, triples, labels, ids, truncated, found)


__all__ = [
    "GraphQueryResult",
    "Triple",
    "entities_in_text",
    "entity_name",
    "graph_query",
    "memory_label",
    "memory_ref",
    "predicate_of",
]
