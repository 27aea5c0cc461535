"""Which memories name which entity, as RelationshipDiscovery reads it (its pairs come from here).

Every memory's names count, in an incremental run too: an entity's document frequency over the
whole store decides whether it is too common to relate two memories, how much sharing it weighs
(IDF) and whether it is rare. So each run goes over every memory's names once, to file it under
them; this is the loop that pays for it (6.6k memories at 10k), kept lean. In an incremental
run a memory's names as a set are made only when asked (``MemoryNames``): 100 of 6.6k after
100 saves at 10k, where making every memory's set was 2/3 of the loop.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain

from cortexgraph.storage.models import MENTIONS_KEY, Memory


def memory_names(m: Memory) -> set[str]:
    """A memory's entities and (a transcript line's) mentions, lower-cased."""
    own = set(map(str.lower, m.entities))
    if MENTIONS_KEY in m.meta.extra:  # most memories are not transcript lines: none to read
        own.update(map(str.lower, m.mentions))
    return own


class MemoryNames(Mapping[str, set[str]]):
    """``memory_names`` of each of ``memories`` (id -> memory), made when first asked."""

    def __init__(self, memories: Mapping[str, Memory]) -> None:
        self._memories = memories
        self._made: dict[str, set[str]] = {}

    def __getitem__(self, memory_id: str) -> set[str]:
        own = self._made.get(memory_id)
        if own is None:
            own = self._made[memory_id] = memory_names(self._memories[memory_id])
        return own

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._memories

    def __iter__(self) -> Iterator[str]:
        return iter(self._memories)

    def __len__(self) -> int:
        return len(self._memories)


@dataclass(frozen=True, slots=True)
class EntityPostings:
    """Each memory's names (``memory_names``) and each entity's memories."""

    names: Mapping[str, set[str]]
    postings: dict[str, list[str]]

    @classmethod
    def of(cls, memories: Mapping[str, Memory], *, lazy: bool = False) -> EntityPostings:
        """``lazy``: a memory's names are made when asked (an incremental run reads a few
        dozen); else every memory's, as a full run reads most of them."""
        if not lazy:
            names = _names_of(memories)
            postings: dict[str, list[str]] = {}
            for mid, own in names.items():
                for e in own:
                    postings.setdefault(e, []).append(mid)
            return cls(names, postings)
        # Each memory filed under its lower-cased entities straight from its tuple, each
        # distinct spelling lowered once (174 names in 20k mentions at 10k): a memory files
        # its names one after another, so a name it repeats ("Redis", "redis") finds the
        # memory at the end of that name's list already.
        lowered: dict[str, str] = {}
        postings = {}
        for mid, m in memories.items():
            if MENTIONS_KEY in m.meta.extra:  # few memories are transcript lines
                for e in memory_names(m):
                    postings.setdefault(e, []).append(mid)
                continue
            for entity in m.entities:
                name = lowered.get(entity)
                if name is None:
                    name = lowered[entity] = entity.lower()
                ids = postings.get(name)
                if ids is None:
                    postings[name] = [mid]
                elif ids[-1] is not mid:
                    ids.append(mid)
        return cls(MemoryNames(memories), postings)

    def eligible(self, common: frozenset[str], least: int) -> set[str]:
        """The memories with at least ``least`` names not in ``common``: a memory with fewer
        can pair with none."""
        if isinstance(self.names, MemoryNames):
            if least <= 0:
                return set(self.names)
            # Counted from the postings, where each memory is filed once under each of its
            # names: no memory's names are made (the set of all was 4.5 ms at 10k).
            uncommon = (ids for e, ids in self.postings.items() if e not in common)
            return {mid for mid, n in Counter(chain.from_iterable(uncommon)).items() if n >= least}
        return {
            mid
            for mid, own in self.names.items()
            if (len(own) >= least if own.isdisjoint(common) else len(own - common) >= least)
        }

    def reached(self, common: frozenset[str], least: int) -> Callable[[str], bool]:
        """``eligible``'s test of one memory, answered for the memories asked about (each
        once): an incremental run asks only of those that share a name with a changed one
        (40 of 6.6k at 10k after one save), where ``eligible`` goes over every memory."""
        names = self.names
        seen: dict[str, bool] = {}

        def test(mid: str) -> bool:
            ok = seen.get(mid)
            if ok is None:
                ok = seen[mid] = _enough(names[mid], common, least)
            return ok

        return test


def _names_of(memories: Mapping[str, Memory]) -> dict[str, set[str]]:
    """``memory_names`` of every memory, in one loop."""
    # ``memory_names`` inlined: a call per memory was a third of the loop (4.4 ms of 6.7 at
    # 10k), and few memories are transcript lines with mentions.
    lower = str.lower
    names = {mid: set(map(lower, m.entities)) for mid, m in memories.items()}
    for mid, m in memories.items():
        if MENTIONS_KEY in m.meta.extra:
            names[mid].update(map(lower, m.mentions))
    return names


def _enough(own: set[str], common: frozenset[str], least: int) -> bool:
    """``eligible``'s test of one memory's names."""
    return len(own) >= least if own.isdisjoint(common) else len(own - common) >= least


__all__ = ["EntityPostings", "MemoryNames", "memory_names"]
