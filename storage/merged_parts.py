"""A merged memory's parts: the archived sources it was made from, for search to score.

A merge archives its sources and names the merged memory in each one's
``meta.extra["merged_into"]`` (agents.merge_ops). The sources stay indexed, so a query scores
them as it did before the merge, and search (storage.search) gives the merged memory its
best-matching part's relevance: a blob of several turns ranked below the one turn that
answered (LoCoMo dev conversation 0 through MCP: MRR 0.565 -> 0.537 after a consolidation),
and, scored by its own text, above turns that had ranked above all of its parts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from cortexgraph.storage.models import Memory, MemoryStatus

if TYPE_CHECKING:
    from cortexgraph.storage.search import SearchableStore

MERGED_INTO = "merged_into"
_CACHE: dict[int, tuple[int, dict[str, str]]] = {}  # text index serial -> (version, map)


def merged_into(store: SearchableStore) -> dict[str, str]:
    """Archived source id -> the unarchived memory it was merged into (through chains of
    merges), recomputed only when the store has changed."""
    text = store.text_index
    hit = _CACHE.get(text.serial)
    if hit is not None and hit[0] == text.version:
        return hit[1]
    memories = store.memories_by_id
    out: dict[str, str] = {}
    for sid in store.ids_by_status.get(MemoryStatus.ARCHIVED, ()):
        into = _target(memories.get(sid))
        seen = {sid}
        while into is not None and into not in seen:
            seen.add(into)
            whole = memories.get(into)
            if whole is None:
                break
            if whole.status is not MemoryStatus.ARCHIVED:
                out[sid] = into
                break
            into = _target(whole)
    if len(_CACHE) > 8:
        _CACHE.clear()
    _CACHE[text.serial] = (text.version, out)
    return out


def _target(memory: Memory | None) -> str | None:
    if memory is None or not memory.meta.extra:
        return None
    into = memory.meta.extra.get(MERGED_INTO)
    return into if isinstance(into, str) else None


def fold_parts(
    relevance: dict[str, float],
    similarity: dict[str, float],
    parts: Mapping[str, str],
    scope: set[str] | None,
) -> None:
    """A merged memory takes its best part's relevance (search leaves its own text unscored:
    it holds every part's words, so it matched a question better than any one part had, and
    on LoCoMo dev through MCP rose above the turn that answered); parts outside ``scope``
    go."""
    best: dict[str, tuple[float, float]] = {}
    for part in [i for i in relevance if i in parts]:
        whole = parts[part]
        rel, sim = best.get(whole, (0.0, 0.0))
        best[whole] = (max(rel, relevance[part]), max(sim, similarity.get(part, 0.0)))
        if scope is not None and part not in scope:
            del relevance[part]
            similarity.pop(part, None)
    for whole, (rel, sim) in best.items():
        relevance[whole] = rel
        similarity[whole] = sim


__all__ = ["MERGED_INTO", "fold_parts", "merged_into"]
