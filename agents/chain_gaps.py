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
last run is gone with its names, so the chains it was in cannot be told: after a deletion the
relations step judges every pair, as a full run (agents.pipeline). A memory that stays but can
no longer pair (an entity it names became too common) leaves its chains too
(agents.entity_standing).
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


def left_departures(
    left: Iterable[Memory], postings: Mapping[str, list[str]], common: frozenset[str]
) -> dict[str, list[Memory]]:
    """The ``left`` memories by each entity chain they may have been in: every name they
    share with a memory still here that is not too common now. Which chains held them
    depended on the last run's standing, not this one's (an entity they named may have
    become too common since, leaving them one name; agents.entity_standing), so none is
    ruled out: a chain that did not hold one gives no pair (``closed_gaps`` returns only
    pairs of the chain as it is now, which a full run pairs too)."""
    departures: dict[str, list[Memory]] = {}
    for m in left:
        for e in memory_names(m) - common:
            if e in postings:
                departures.setdefault(e, []).append(m)
    return departures


def closed_gaps(
    departures: Mapping[str, list[Memory]],
    memories: Mapping[str, Memory],
    postings: Mapping[str, list[str]],
    rare: Collection[str],
    can_pair: Callable[[str], bool],
    pairs_of: PairsOf,
) -> set[tuple[str, str]]:
    """The pairs each entity's chain holds now that it did not hold with its departed
    memories in it (``departures``: memories that left the store, or that can no longer
    pair, agents.entity_standing): the chain made twice by ``pairs_of`` (the relations
    step's own pairing), with and without them."""
    found: set[tuple[str, str]] = set()
    for e, gone in departures.items():
        members = postings[e] if e in rare else [i for i in postings[e] if can_pair(i)]
        chain = {i: memories[i] for i in members}  # what ``pairs_of`` reads: their times
        now = set(pairs_of(e, members, chain))
        chain.update((m.id, m) for m in gone)
        before = [*members, *(m.id for m in gone if m.id not in members)]
        found |= now - set(pairs_of(e, before, chain))
    return found


__all__ = ["closed_gaps", "left_departures", "left_ids"]
