"""JSON shapes of records returned by tools: bounded previews and page metadata."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from cortexgraph.storage.decay import DAY, DecayConfig, memory_score
from cortexgraph.storage.models import Memory, Relation, SearchResult

T = TypeVar("T")

MAX_PAGE_SIZE = 100
MAX_PREVIEW = 20_000


def preview(text: str, length: int) -> str:
    if length <= 0:
        return ""
    return text if len(text) <= length else text[: max(1, length - 1)].rstrip() + "…"


def memory_view(
    memory: Memory,
    *,
    preview_length: int,
    now: float | None = None,
    decay: DecayConfig | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": memory.id,
        "content": preview(memory.content, preview_length),
        "truncated": len(memory.content) > preview_length,
        "tags": list(memory.tags),
        "entities": list(memory.entities),
        "source": memory.meta.source,
        "context": memory.meta.context,
        "created_at": memory.created_at,
        "last_used": memory.last_used,
        "use_count": memory.use_count,
        "strength": round(memory.strength, 4),
        "status": memory.status.value,
    }
    if memory.promoted_to:
        out["promoted_to"] = memory.promoted_to
    if now is not None and decay is not None:
        out["score"] = round(memory_score(memory, now, decay), 4)
        out["age_days"] = round(max(0.0, (now - memory.created_at) / DAY), 2)
    return out


def relation_view(relation: Relation) -> dict[str, Any]:
    """A relation's record with 1.x's names beside ours: ``from``, ``to``, ``type``."""
    return {
        **relation.to_json(),
        "from": relation.from_memory_id,
        "to": relation.to_memory_id,
        "type": relation.relation_type,
    }


def result_view(result: SearchResult, preview_length: int) -> dict[str, Any]:
    view = memory_view(result.memory, preview_length=preview_length)
    view.update(
        score=round(result.score, 4),
        similarity=round(result.similarity, 4),
        decay_score=round(result.decay_score, 4),
        age_days=round(result.age_days, 2),
        from_review=result.from_review,
    )
    return view


@dataclass(frozen=True, slots=True)
class Page:
    items: Sequence[Any]
    page: int
    page_size: int
    total: int

    @property
    def total_pages(self) -> int:
        return max(1, math.ceil(self.total / self.page_size))

    def meta(self) -> dict[str, Any]:
        return {
            "page": self.page,
            "page_size": self.page_size,
            "total": self.total,
            "total_pages": self.total_pages,
            "has_more": self.page < self.total_pages,
        }


def paginate(items: Sequence[T], page: int, page_size: int) -> Page:
    start = (page - 1) * page_size
    return Page(items[start : start + page_size], page, page_size, len(items))


__all__ = [
    "MAX_PAGE_SIZE",
    "MAX_PREVIEW",
    "Page",
    "memory_view",
    "paginate",
    "preview",
    "result_view",
]
