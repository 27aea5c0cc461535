"""The pairs a memory's leaving makes: what an incremental relations step must also judge.

RelationshipDiscovery pairs the memories that name a common entity by time: each with the one
just before it, and the nearest a day or more before (``RelationshipDiscovery._pairs``). When a
memory leaves the active set (archived since the last run, or merged by this run into a memory
that takes its sources' earliest time), the two memories either side of it in an entity's chain
become neighbours: a pair of two memories that did not change, which a full run makes and
judges. An incremental run pairs only what holds a changed memory, so without this it never
judges that pair, and the weekly full run adds relations the hourly runs should have added
(bench/soak_incremental.py found 4 of 5 so after twelve rounds of saves and merges).

What left is read from the scope itself: a memory in it that is no longer active or promoted,
and the sources a merged memory in it names in its provenance (``merge_ops.PROVENANCE_KEY``:
this run's merges put the merged memory in scope, not its sources). A memory deleted since the
last run is gone with its names and is not covered (the weekly full run is).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from cortexgraph.agents.entity_postings import memory_names
from cortexgraph.agents.merge_ops import PROVENANCE_KEY
from cortexgraph.storage.models import Memory

PairsOf = Callable[[str, list[str], Mapping[str, Memory]], Iterable[tuple[str, str]]]


def left_ids(scope: Collection[str], memories: Mapping[str, Memory]) -> set[str]:
    """The ids of the memories that left which ``scope`` tells of (``memories``: those not
    archived, by id): scope ids not among them, and the sources of merged memories in scope."""
    left = {i for i in scope if i not in memories}
    for i in scope:
        m = memories.get(i)
        merge = m.meta.extra.get(PROVENANCE_KEY) if m is not None else None
        if isinstance(merge, dict):
            for source in merge.get("sources") or ():
                if isinstance(source, dict) and isinstance(source.get("id"), str):
                    left.add(source["id"])
    return left - memories.keys()


def closed_gaps(
    left: Iterable[Memory],
    memories: Mapping[str, Memory],
    postings: Mapping[str, list[str]],
    common: frozenset[str],
    rare: Collection[str],
    can_pair: Callable[[str], bool],
    least: int,
    pairs_of: PairsOf,
) -> set[tuple[str, str]]:
    """The pairs each entity's chain holds now that it did not hold with the ``left``
    memories in it: per entity a left memory named (and could pair by), the chain made twice
    by ``pairs_of`` (the relations step's own pairing), with and without them."""
    by_entity: dict[str, list[str]] = {}
    gone: dict[str, Memory] = {}
    for m in left:
        own = memory_names(m) - common
        for e in own:
            if e in postings and (e in rare or len(own) >= least):
                by_entity.setdefault(e, []).append(m.id)
                gone[m.id] = m
    found: set[tuple[str, str]] = set()
    for e, ids in by_entity.items():
        members = postings[e] if e in rare else [i for i in postings[e] if can_pair(i)]
        chain = {i: memories[i] for i in members}  # what ``pairs_of`` reads: their times
        now = set(pairs_of(e, members, chain))
        chain.update((i, gone[i]) for i in ids)
        found |= now - set(pairs_of(e, [*members, *ids], chain))
    return found


__all__ = ["closed_gaps", "left_ids"]
