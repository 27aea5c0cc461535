"""Related memories of the best hits, for questions whose answer spans several memories.

RelationshipDiscovery links memories about the same person or thing (``related`` relations).
A question such as "what are Melanie's pets called?" is answered by two turns weeks apart; the
one that names the pet the question words match best brings in its linked neighbour. Each of
the ``seeds`` best STM hits lends ``weight`` x its score x the link's strength to every memory
related to it: added to a memory already found, or as the score of one the query did not reach.
With weight < 1 and strength <= 1 a neighbour reached only through a link scores below the hit
that brought it in, so it can pass weaker direct hits but never the hit it came from.
"""

from __future__ import annotations

from typing import Any

from cortexgraph.storage.models import MemoryStatus
from cortexgraph.storage.protocol import MemoryStore
from cortexgraph.storage.search import RELATED_WEIGHT  # off; CORTEXGRAPH_SEARCH_RELATED_WEIGHT

RELATED_SEEDS = 5
RELATION_TYPE = "related"


def add_related(
    store: MemoryStore,
    merged: dict[str, dict[str, Any]],
    *,
    weight: float = RELATED_WEIGHT,
    seeds: int = RELATED_SEEDS,
) -> int:
    """Lend the best ``seeds`` STM entries' scores to their related memories, in place
    (``merged``: key -> entry as unified search builds it). Returns how many entries gained."""
    if weight <= 0 or seeds <= 0:
        return 0
    stm = [(e["stm"], key, e) for key, e in merged.items() if "stm" in e and "memory" in e]
    stm.sort(key=lambda t: (-t[0], t[1]))
    by_memory = {e["memory"].id: key for _, key, e in stm}
    bonus: dict[str, float] = {}
    source: dict[str, str] = {}
    found: dict[str, Any] = {}
    for score, _, entry in stm[:seeds]:
        seed = entry["memory"]
        for rel in store.relations(seed.id, RELATION_TYPE):
            other_id = rel.other_end(seed.id)
            lent = weight * score * max(0.0, min(1.0, rel.strength))
            if lent <= 0 or other_id == seed.id:
                continue
            if other_id not in by_memory and other_id not in found:
                other = store.find(other_id)
                if other is None or other.status == MemoryStatus.ARCHIVED:
                    continue
                found[other_id] = other
            bonus[other_id] = bonus.get(other_id, 0.0) + lent
            source.setdefault(other_id, seed.id)
    for memory_id, extra in bonus.items():
        key = by_memory.get(memory_id, f"memory:{memory_id}")
        if key not in merged:
            merged[key] = {"stm": 0.0, "memory": found[memory_id], "note": None}
            merged[key]["details"] = {"stm_score": 0.0}
        entry = merged[key]
        entry["stm"] = entry.get("stm", 0.0) + extra
        entry.setdefault("details", {})["related_bonus"] = round(extra, 4)
    return len(bonus)


__all__ = ["RELATED_SEEDS", "RELATED_WEIGHT", "add_related"]
