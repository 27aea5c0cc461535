"""An entity's standing in the relations step, and what its change makes relatable.

RelationshipDiscovery leaves out entities *too common* to relate two memories (on more memories
than the ceiling: 8% of the store, at least 20, at most 200) and pairs every memory naming a
*rare* one (on at most 12 memories and 5% of the store) whatever else it names. Both are the
whole store's standing: a save, merge or archive anywhere moves the ceiling and the counts, so
an entity's standing can change though none of the memories naming it did. A full run then
pairs memories that no incremental run looks at (it pairs only what holds a changed memory);
bench/soak_incremental.py found a full run adding five relations so after twelve hourly runs.

So a run keeps the standing it judged by (``EntityStanding``, in the run state) and the next
incremental run looks again at:

- every memory naming an entity whose standing changed (``moved_members``): one no longer too
  common is paired again through its chains, and its memories may pair at all again (a memory
  needs two names that are not too common); one newly too common no longer weighs in its
  memories' IDF-weighted Jaccard; one newly rare pairs all its memories. Pairs holding those
  memories are then judged as a full run judges them.
- the gaps a memory leaves in an entity's time chain when it can no longer pair (an entity it
  names became too common, leaving it one name: ``dropped_departures``), as when a memory
  leaves the store (agents.chain_gaps): the two memories either side of it become neighbours
  though neither moved.

What this does not cover, and the weekly full run does: the IDF weights themselves move with
the store's size (``log(N / df)``), so a pair relating through one rare name near the Jaccard
bar can cross it by time and saves alone; and a memory edited to name other entities leaves
its old chains without a trace of what it named.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class EntityStanding:
    """The entities a relations step judged too common, and those it judged rare."""

    too_common: frozenset[str]
    rare: frozenset[str]

    def to_state(self) -> dict[str, list[str]]:
        """As the run state keeps it (cortexgraph.run_state)."""
        return {"too_common": sorted(self.too_common), "rare": sorted(self.rare)}

    @classmethod
    def from_state(cls, raw: Any) -> EntityStanding | None:
        """``to_state``'s value read back; None for anything else (a state from before)."""
        if not isinstance(raw, Mapping):
            return None
        common, rare = raw.get("too_common"), raw.get("rare")
        if not isinstance(common, list | tuple) or not isinstance(rare, list | tuple):
            return None
        if not all(isinstance(e, str) for e in (*common, *rare)):
            return None
        return cls(frozenset(common), frozenset(rare))

    def summary(self) -> dict[str, int]:
        """What a report shows of it (the rare ones are thousands in a big store)."""
        return {"too_common": len(self.too_common), "rare": len(self.rare)}


def standing_json(standing: EntityStanding | None) -> dict[str, int] | None:
    return None if standing is None else standing.summary()


def moved_members(
    last: EntityStanding, now: EntityStanding, postings: Mapping[str, list[str]]
) -> set[str]:
    """The memories naming an entity whose standing differs between ``last`` and ``now``."""
    moved = (last.too_common ^ now.too_common) | (last.rare ^ now.rare)
    return {i for e in moved for i in postings.get(e, ())}


def dropped_departures(
    last: EntityStanding,
    now: EntityStanding,
    postings: Mapping[str, list[str]],
    names: Mapping[str, set[str]],
    can_pair: Callable[[str], bool],
    least: int,
) -> dict[str, list[str]]:
    """The memories that could pair under ``last`` and cannot now (an entity they name became
    too common), by each entity chain they leave: the chains of their other names that are
    not rare (a rare entity's chain holds every memory naming it, paired or not)."""
    newly = now.too_common - last.too_common
    departures: dict[str, list[str]] = {}
    dropped = {i for e in newly for i in postings.get(e, ())}
    for i in sorted(dropped):
        own = names[i]
        if can_pair(i) or len(own - last.too_common) < least:
            continue
        for e in own - now.too_common:
            if e in postings and e not in now.rare:
                departures.setdefault(e, []).append(i)
    return departures


__all__ = [
    "EntityStanding",
    "dropped_departures",
    "moved_members",
    "standing_json",
]
