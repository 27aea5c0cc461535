"""What a store promises: the ``MemoryStore`` Protocol, its small result types, and the
embedding interfaces search and the agents are written against (``Embedder``, ``DenseScorer``,
``DenseIndex``).

Agents, flows and the MCP server program against ``MemoryStore``; ``IndexedStore``
(storage.indexed_store) and ``JSONLStore`` (storage.jsonl_store) implement it.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.models import Memory, MemoryStatus, Relation, SearchResult

if TYPE_CHECKING:  # numpy only for the annotation: importing this module stays cheap
    import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 row vectors (storage.embeddings has the real
    ones; agents, activation and vault_sync take any object that fits)."""

    @property
    def name(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class DenseScorer(Protocol):
    """Embedding similarity for the hybrid search, given the memories themselves: the least a
    store's ``dense`` must do. Search asks a ``DenseIndex`` instead when the object is one."""

    def similarities(self, query: str, memories: Sequence[Memory]) -> dict[str, float]: ...

    def top(self, query: str, memories: Sequence[Memory], k: int) -> dict[str, float]: ...


@runtime_checkable
class DenseIndex(Protocol):
    """An embedding index whose rows follow the store's changes (storage.embeddings'
    ``MatrixDenseIndex``, the MCP server's lazy wrapper): a query is one matrix-vector product
    instead of handing every memory over (storage.search keeps the rows in step)."""

    @property
    def embeds_in_background(self) -> bool:
        """True when a background embedder fills the cache: a search may leave memories to it."""
        ...

    @property
    def background_busy(self) -> bool:
        """True while that background embedder is working through a backlog."""
        ...

    def sync(
        self,
        memories: Sequence[Memory],
        removed: Iterable[str] | None = (),
        embed_limit: int | None = None,
        backlog_limit: int = 2_000,
        prefer: Sequence[str] | None = None,
    ) -> builtins.list[Memory]:
        """Make the rows of ``memories`` current and drop the rows of the ``removed`` ids
        (``None``: ``memories`` are all there is, drop every other row). Returns the memories
        left for the background embedder (``embed_limit``, ``backlog_limit``; with ``prefer``,
        only those ids are embedded now, best first, e.g. a question's lexical hits)."""
        ...

    def ranked(self, query: str, k: int, allowed: Container[str] | None = None) -> dict[str, float]:
        """Cosine of the k rows most similar to ``query`` (only ``allowed`` ids, if given)."""
        ...

    def scores_of(self, query: str, memory_ids: Iterable[str]) -> dict[str, float]:
        """Cosine of these ids' rows (ids without a row are left out)."""
        ...


@runtime_checkable
class OwnWordsScorer(Protocol):
    """A dense scorer that can also compare a query with memories' own words alone: their
    content, without the context embedded beside it (storage.embeddings' ``MatrixDenseIndex``
    and the MCP server's lazy wrapper). Search uses it where it is offered."""

    def content_scores(
        self, query: str, memories: Sequence[Memory], embed_limit: int | None = None
    ) -> dict[str, float]:
        """Cosine of ``query`` to each memory's content alone, by memory id (with
        ``embed_limit``: embedding at most that many new texts; the others are left out)."""
        ...


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


@dataclass(slots=True)
class WriteLog:
    """What one thread wrote through a store while ``MemoryStore.recording_writes`` was open:
    the ids of memories it saved, changed or deleted (``written``), of those that were new to
    the store (``created``), and of the relations it saved or deleted (``relations``)."""

    written: set[str] = field(default_factory=set)
    created: set[str] = field(default_factory=set)
    relations: set[str] = field(default_factory=set)


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
        neighbour: str | None = None,
    ) -> Memory: ...

    def put(self, memory: Memory) -> Memory: ...
    def put_many(self, memories: Iterable[Memory]) -> list[Memory]: ...
    def get(self, memory_id: str) -> Memory: ...
    def find(self, memory_id: str) -> Memory | None: ...
    def find_many(self, memory_ids: Iterable[str]) -> builtins.list[Memory]:
        """The held memories of ``memory_ids`` in their order, missing ones left out."""
        ...

    def update(self, memory_id: str, **changes: Any) -> Memory: ...
    def modify(self, memory_id: str, change: Callable[[Memory], Memory | None]) -> Memory:
        """Read-modify-write under one hold of the write lock (``change``: current -> new)."""
        ...

    def modify_many(
        self, memory_ids: Iterable[str], change: Callable[[Memory], Memory | None]
    ) -> builtins.list[Memory]: ...
    def delete(self, memory_id: str) -> None: ...
    def writing(self) -> AbstractContextManager[None]:
        """Several writes as one hold of the store: no other writer in between."""
        ...

    def recording_writes(self) -> AbstractContextManager[WriteLog]:
        """The ids of the memories this thread saves, changes or deletes through the store
        while open (what a consolidation run wrote itself, told apart from other callers'
        and other processes' writes meanwhile)."""
        ...

    def list(
        self, status: MemoryStatus | None = None, tags: Iterable[str] | None = None
    ) -> list[Memory]: ...
    def touch(
        self, memory_id: str, *, boost_strength: bool = False, now: float | None = None
    ) -> Memory: ...
    def save_ranks(self, memory_ids: Iterable[str]) -> dict[str, int]:
        """Each held id's place in the order the memories were first saved (later, higher)."""
        ...

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
    def put_relations(self, relations: Iterable[Relation]) -> builtins.list[Relation]: ...
    def relations(
        self, memory_id: str | None = None, relation_type: str | None = None
    ) -> builtins.list[Relation]: ...
    def delete_relation(self, relation_id: str) -> None: ...
    def stats(self, now: float | None = None) -> StoreStats: ...
    def compact(self) -> CompactionReport: ...
    def __len__(self) -> int: ...
    def __contains__(self, memory_id: object) -> bool: ...


__all__ = [
    "CompactionReport",
    "DenseIndex",
    "DenseScorer",
    "Embedder",
    "MemoryStore",
    "OwnWordsScorer",
    "StoreStats",
    "WriteLog",
]
