"""What a store promises: the ``MemoryStore`` Protocol and its small result types.

Agents, flows and the MCP server program against ``MemoryStore``; ``IndexedStore``
(storage.memory_store) and ``JSONLStore`` (storage.jsonl_store) implement it.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.models import Memory, MemoryStatus, Relation, SearchResult


class DenseScorer(Protocol):
    """Embedding similarity for the hybrid search (see storage.embeddings.DenseIndex)."""

    def similarities(self, query: str, memories: Sequence[Memory]) -> dict[str, float]: ...

    def top(self, query: str, memories: Sequence[Memory], k: int) -> dict[str, float]: ...


@dataclass(frozen=True, slots=True)
class StoreStats:
    memories: int
    active: int
    promoted: int
    archived: int
    relations: int
    danger_zone: int
    below_forget_threshold: int
    quarantined_lines: int
    file_bytes: int
    tags: int
    entities: int

    def to_json(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(frozen=True, slots=True)
class CompactionReport:
    memories_kept: int
    relations_kept: int
    lines_before: int
    lines_after: int
    bytes_before: int
    bytes_after: int


@runtime_checkable
class MemoryStore(Protocol):
    """What agents and adapters may do with a store."""

    config: StoreConfig

    def save(
        self,
        content: str,
        *,
        tags: Iterable[str] | None = None,
        entities: Iterable[str] | None = None,
        source: str | None = None,
        context: str | None = None,
        extra: Mapping[str, Any] | None = None,
        strength: float = 1.0,
        now: float | None = None,
    ) -> Memory: ...

    def put(self, memory: Memory) -> Memory: ...
    def put_many(self, memories: Iterable[Memory]) -> list[Memory]: ...
    def get(self, memory_id: str) -> Memory: ...
    def find(self, memory_id: str) -> Memory | None: ...
    def update(self, memory_id: str, **changes: Any) -> Memory: ...
    def delete(self, memory_id: str) -> None: ...
    def list(
        self, status: MemoryStatus | None = None, tags: Iterable[str] | None = None
    ) -> list[Memory]: ...
    def touch(
        self, memory_id: str, *, boost_strength: bool = False, now: float | None = None
    ) -> Memory: ...
    def search(
        self,
        query: str | None = None,
        *,
        tags: Iterable[str] | None = None,
        top_k: int = 10,
        window_days: float | None = None,
        min_score: float | None = None,
        status: MemoryStatus | None = MemoryStatus.ACTIVE,
        now: float | None = None,
        use_embeddings: bool | None = None,
    ) -> builtins.list[SearchResult]: ...
    def add_relation(
        self,
        from_memory_id: str,
        to_memory_id: str,
        relation_type: str = "related",
        *,
        strength: float = 1.0,
        metadata: Mapping[str, Any] | None = None,
        now: float | None = None,
    ) -> Relation: ...
    def put_relation(self, relation: Relation) -> Relation: ...
    def relations(
        self, memory_id: str | None = None, relation_type: str | None = None
    ) -> builtins.list[Relation]: ...
    def delete_relation(self, relation_id: str) -> None: ...
    def stats(self, now: float | None = None) -> StoreStats: ...
    def compact(self) -> CompactionReport: ...
    def __len__(self) -> int: ...
    def __contains__(self, memory_id: object) -> bool: ...


__all__ = ["CompactionReport", "DenseScorer", "MemoryStore", "StoreStats"]
