"""Reinforcement by use: a memory used in an answer is reviewed (natural spaced repetition).

A use counts as cross-domain when the conversation's tags overlap the memory's own little
(tag Jaccard below 0.3, as in cortexgraph 1.x): a fact that proves useful far from where it
was learned is held a little more strongly (+0.05 strength, at most 2.0). Using a memory that
gc archived brings it back to active, as recalling a forgotten thing does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from cortexgraph.storage.merged_parts import MERGED_INTO
from cortexgraph.storage.models import Memory, MemoryStatus

CROSS_DOMAIN_JACCARD = 0.3  # below this tag overlap a use counts as cross-domain
CROSS_DOMAIN_BOOST = 0.05
MAX_STRENGTH = 2.0


@dataclass(frozen=True, slots=True)
class Use:
    """One recorded use: the memory after it, and whether it was cross-domain."""

    memory: Memory
    cross_domain: bool
    tag_jaccard: float | None  # None: the memory or the conversation has no tags


def tag_jaccard(memory: Memory, context_tags: Iterable[str]) -> float | None:
    own = {t.lower() for t in memory.tags}
    ctx = {t.lower() for t in context_tags}
    return len(own & ctx) / len(own | ctx) if own and ctx else None


def status_after_use(memory: Memory) -> MemoryStatus:
    """A used memory's status: one gc archived is active again (search_unified shows those,
    labelled archived); a merge's archived source stays archived, its merged memory stands
    for it."""
    if memory.status is MemoryStatus.ARCHIVED and not memory.meta.extra.get(MERGED_INTO):
        return MemoryStatus.ACTIVE
    return memory.status


def observe_use(memory: Memory, context_tags: Iterable[str], now: int) -> Use:
    """``memory`` used at ``now`` in a conversation about ``context_tags``: one use and one
    review more, review priority cleared, and the cross-domain boost when it applies."""
    jaccard = tag_jaccard(memory, context_tags)
    cross = jaccard is not None and jaccard < CROSS_DOMAIN_JACCARD
    used = replace(
        memory,
        last_used=now,
        use_count=memory.use_count + 1,
        last_review_at=now,
        review_count=memory.review_count + 1,
        review_priority=0.0,
        status=status_after_use(memory),
        cross_domain_count=memory.cross_domain_count + int(cross),
        strength=min(MAX_STRENGTH, memory.strength + CROSS_DOMAIN_BOOST)
        if cross
        else memory.strength,
    )
    return Use(used, cross, jaccard)


__all__ = [
    "CROSS_DOMAIN_BOOST",
    "CROSS_DOMAIN_JACCARD",
    "Use",
    "observe_use",
    "status_after_use",
    "tag_jaccard",
]
