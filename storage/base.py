"""The store interface and the in-memory indexes every implementation shares.

``MemoryStore`` is the Protocol the agents, flows and the MCP server program against.
``IndexedStore`` keeps records and indexes (id, tag, entity, status, BM25 text) in memory and
implements every operation on top of three persistence hooks; ``InMemoryStore`` uses no-op hooks,
``JSONLStore`` appends to files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from storage.config import StoreConfig
from storage.decay import DAY, in_danger_zone, memory_score
from storage.errors import (
    ContentTooLargeError,
    InvalidInputError,
    MemoryNotFoundError,
    RelationNotFoundError,
)
from storage.models import (
    RELATION_TYPES,
    Memory,
    MemoryMeta,
    MemoryStatus,
    Relation,
    SearchResult,
    new_id,
    validate_id,
    validate_strength,
    validate_tags,
)


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
    ) -> list[SearchResult]: ...
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
    ) -> list[Relation]: ...
    def delete_relation(self, relation_id: str) -> None: ...
    def stats(self, now: float | None = None) -> StoreStats: ...
    def compact(self) -> CompactionReport: ...
    def __len__(self) -> int: ...
    def __contains__(self, memory_id: object) -> bool: ...


def _encode(record: dict[str, Any], what: str) -> str:
    try:
        return json.dumps(record, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"{what} cannot be stored as JSON ({exc}); use strings, numbers, lists and objects"
        ) from exc


def content_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def searchable_text(memory: Memory) -> str:
    """What the text index sees: content plus tags and entities (tags split on '/', '-', '_')."""
    extras = " ".join(memory.tags) + " " + " ".join(memory.entities)
    extras = extras.replace("/", " ").replace("_", " ").replace("-", " ")
    return f"{memory.content}\n{extras}"


class IndexedStore:
    """Records and indexes in memory; subclasses persist through the ``_persist_*`` hooks."""

    def __init__(self, config: StoreConfig | None = None, dense: DenseScorer | None = None) -> None:
        from storage.text_index import TextIndex

        self.config = config or StoreConfig()
        self.dense = dense
        self._lock = threading.RLock()
        self._memories: dict[str, Memory] = {}
        self._relations: dict[str, Relation] = {}
        self._by_tag: dict[str, set[str]] = {}
        self._by_entity: dict[str, set[str]] = {}
        self._by_status: dict[MemoryStatus, set[str]] = {s: set() for s in MemoryStatus}
        self._relations_by_memory: dict[str, set[str]] = {}
        self._text = TextIndex()
        self.quarantined_lines = 0

    # -- persistence hooks ---------------------------------------------------------------------
    def _persist_memories(self, memories: Sequence[Memory], lines: Sequence[str]) -> None:
        """Called after validation, before the in-memory indexes change; ``lines`` are JSON."""

    def _persist_relations(self, relations: Sequence[Relation], lines: Sequence[str]) -> None: ...

    def _persist_deletions(
        self, memory_ids: Sequence[str], relation_ids: Sequence[str]
    ) -> None: ...

    def _sync(self) -> None:
        """Bring the in-memory view up to date with what other processes wrote."""

    def _file_bytes(self) -> int:
        return 0

    def _exclusive(self) -> AbstractContextManager[Any]:
        """Held around read-modify-write (update, touch, delete): no other writer in between."""
        return contextlib.nullcontext()

    def _load(self, memories: Iterable[Memory], relations: Iterable[Relation]) -> None:
        """Index a whole snapshot (load, reload, copy): the hot path of opening a big store."""
        by_id, by_tag, by_entity, by_status = (
            self._memories, self._by_tag, self._by_entity, self._by_status
        )  # fmt: skip
        text_add = self._text.add
        for m in memories:
            if m.id in by_id:
                self._index_memory(m)
                continue
            mid = m.id
            by_id[mid] = m
            for tag in m.meta.tags:
                by_tag.setdefault(tag.lower(), set()).add(mid)
            for ent in m.entities:
                by_entity.setdefault(ent.lower(), set()).add(mid)
            by_status[m.status].add(mid)
            text_add(mid, searchable_text(m))
        for r in relations:
            self._index_relation(r)

    # -- index maintenance ---------------------------------------------------------------------
    def _index_memory(self, memory: Memory) -> None:
        old = self._memories.get(memory.id)
        if old is not None:
            self._unindex_memory(
                old,
                keep_text=old.content == memory.content
                and old.tags == memory.tags
                and old.entities == memory.entities
                and old.meta.context == memory.meta.context,
            )
        self._memories[memory.id] = memory
        for tag in memory.tags:
            self._by_tag.setdefault(tag.lower(), set()).add(memory.id)
        for ent in memory.entities:
            self._by_entity.setdefault(ent.lower(), set()).add(memory.id)
        self._by_status[memory.status].add(memory.id)
        if memory.id not in self._text:
            self._text.add(memory.id, searchable_text(memory), context=memory.meta.context)

    def _unindex_memory(self, memory: Memory, keep_text: bool = False) -> None:
        self._memories.pop(memory.id, None)
        for tag in memory.tags:
            ids = self._by_tag.get(tag.lower())
            if ids is not None:
                ids.discard(memory.id)
                if not ids:
                    del self._by_tag[tag.lower()]
        for ent in memory.entities:
            ids = self._by_entity.get(ent.lower())
            if ids is not None:
                ids.discard(memory.id)
                if not ids:
                    del self._by_entity[ent.lower()]
        self._by_status[memory.status].discard(memory.id)
        if not keep_text:
            self._text.remove(memory.id)

    def _index_relation(self, relation: Relation) -> None:
        if relation.id in self._relations:
            self._unindex_relation(relation.id)
        self._relations[relation.id] = relation
        self._relations_by_memory.setdefault(relation.from_memory_id, set()).add(relation.id)
        self._relations_by_memory.setdefault(relation.to_memory_id, set()).add(relation.id)

    def _unindex_relation(self, relation_id: str) -> None:
        relation = self._relations.pop(relation_id, None)
        if relation is None:
            return
        for mid in (relation.from_memory_id, relation.to_memory_id):
            ids = self._relations_by_memory.get(mid)
            if ids is not None:
                ids.discard(relation_id)
                if not ids:
                    del self._relations_by_memory[mid]

    def _clear_indexes(self) -> None:
        from storage.text_index import TextIndex

        self._memories.clear()
        self._relations.clear()
        self._by_tag.clear()
        self._by_entity.clear()
        for ids in self._by_status.values():
            ids.clear()
        self._relations_by_memory.clear()
        self._text = TextIndex()

    # -- validation ----------------------------------------------------------------------------
    def _validate(self, memory: Memory) -> tuple[Memory, str]:
        """The memory as it will be stored, and its JSON line.

        The line is parsed back with the loader's own rules, so nothing is ever written that a
        later load would refuse (and quarantine).
        """
        if not isinstance(memory, Memory):
            raise InvalidInputError(f"expected a Memory, got {type(memory).__name__}")
        if not isinstance(memory.content, str) or not memory.content.strip():
            raise InvalidInputError("content must be a non-empty string; nothing to remember")
        size = len(memory.content.encode("utf-8"))
        if size > self.config.max_content_bytes:
            raise ContentTooLargeError(
                f"content is {size:,} bytes; the limit is {self.config.max_content_bytes:,} "
                "(CORTEXGRAPH_MAX_CONTENT_BYTES). Split it into smaller memories."
            )
        validate_id(memory.id)
        validate_strength(memory.strength)
        line = _encode(memory.to_json(), "memory")
        return Memory.from_json(json.loads(line)), line

    def _validate_relation(self, relation: Relation) -> tuple[Relation, str]:
        if not isinstance(relation, Relation):
            raise InvalidInputError(f"expected a Relation, got {type(relation).__name__}")
        if (
            not isinstance(relation.relation_type, str)
            or relation.relation_type not in RELATION_TYPES
        ):
            raise InvalidInputError(
                f"unknown relation_type {relation.relation_type!r}; "
                f"choose one of {', '.join(sorted(RELATION_TYPES))}"
            )
        validate_strength(relation.strength, upper=1.0)
        if relation.from_memory_id == relation.to_memory_id:
            raise InvalidInputError("a relation needs two different memories")
        line = _encode(relation.to_json(), "relation")
        return Relation.from_json(json.loads(line)), line

    # -- memories ------------------------------------------------------------------------------
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
    ) -> Memory:
        ts = int(time.time() if now is None else now)
        if not isinstance(content, str):
            raise InvalidInputError(f"content must be a string, got {type(content).__name__}")
        if extra is not None and not isinstance(extra, Mapping):
            raise InvalidInputError("extra must be an object (a mapping of names to values)")
        memory = Memory(
            id=new_id(),
            content=content.strip(),
            meta=MemoryMeta(
                tags=validate_tags(tags), source=source, context=context, extra=dict(extra or {})
            ),
            entities=validate_tags(entities, "entities"),
            created_at=ts,
            last_used=ts,
            strength=validate_strength(strength),
        )
        return self.put(memory)

    def put(self, memory: Memory) -> Memory:
        return self.put_many([memory])[0]

    def put_many(self, memories: Iterable[Memory]) -> list[Memory]:
        """Insert or replace memories (all validated before anything is written)."""
        pairs = [self._validate(m) for m in memories]
        checked = [m for m, _ in pairs]
        with self._lock:
            self._persist_memories(checked, [line for _, line in pairs])
            for m in checked:
                self._index_memory(m)
        return checked

    def find(self, memory_id: str) -> Memory | None:
        validate_id(memory_id)
        with self._lock:
            self._sync()
            return self._memories.get(memory_id)

    def get(self, memory_id: str) -> Memory:
        memory = self.find(memory_id)
        if memory is None:
            raise MemoryNotFoundError(f"no memory with id {memory_id!r}")
        return memory

    _UPDATABLE = frozenset(
        {"content", "entities", "strength", "status", "promoted_at", "promoted_to", "use_count",
         "last_used", "review_priority", "last_review_at", "review_count", "cross_domain_count",
         "created_at", "meta"}
    )  # fmt: skip

    def update(self, memory_id: str, **changes: Any) -> Memory:
        """Change fields of a memory; ``tags``, ``source``, ``context``, ``extra`` edit its meta."""
        with self._lock, self._exclusive():
            memory = self.get(memory_id)
            meta_changes = {k: changes.pop(k) for k in ("tags", "source", "context", "extra")
                            if k in changes}  # fmt: skip
            unknown = set(changes) - self._UPDATABLE
            if unknown:
                raise InvalidInputError(f"cannot update field(s) {sorted(unknown)}")
            if "status" in changes and not isinstance(changes["status"], MemoryStatus):
                try:
                    changes["status"] = MemoryStatus(changes["status"])
                except ValueError as exc:
                    raise InvalidInputError(f"unknown status {changes['status']!r}") from exc
            if "entities" in changes:
                changes["entities"] = validate_tags(changes["entities"], "entities")
            if meta_changes:
                if "tags" in meta_changes:
                    meta_changes["tags"] = validate_tags(meta_changes["tags"])
                if "extra" in meta_changes and not isinstance(meta_changes["extra"], Mapping):
                    raise InvalidInputError(
                        "extra must be an object (a mapping of names to values)"
                    )
                changes["meta"] = replace(memory.meta, **meta_changes)
            return self.put(replace(memory, **changes))

    def delete(self, memory_id: str) -> None:
        """Delete a memory and every relation that touches it."""
        with self._lock, self._exclusive():
            memory = self.get(memory_id)
            rel_ids = sorted(self._relations_by_memory.get(memory_id, ()))
            self._persist_deletions([memory_id], rel_ids)
            for rid in rel_ids:
                self._unindex_relation(rid)
            self._unindex_memory(memory)

    def list(
        self, status: MemoryStatus | None = None, tags: Iterable[str] | None = None
    ) -> list[Memory]:
        with self._lock:
            self._sync()
            ids: set[str] | None = None if status is None else set(self._by_status[status])
            for tag in validate_tags(tags):
                tagged = self._by_tag.get(tag.lower(), set())
                ids = set(tagged) if ids is None else ids & tagged
            if ids is None:
                return list(self._memories.values())
            return [self._memories[i] for i in ids]

    def __iter__(self) -> Iterator[Memory]:
        return iter(self.list())

    def __len__(self) -> int:
        with self._lock:
            self._sync()
            return len(self._memories)

    def __contains__(self, memory_id: object) -> bool:
        with self._lock:
            self._sync()
            return memory_id in self._memories

    def ids_with_entity(self, entity: str) -> set[str]:
        with self._lock:
            self._sync()
            return set(self._by_entity.get(entity.lower(), ()))

    def touch(
        self, memory_id: str, *, boost_strength: bool = False, now: float | None = None
    ) -> Memory:
        """Record a use: last_used = now, use_count + 1, optionally strength + 0.1 (max 2)."""
        ts = int(time.time() if now is None else now)
        with self._lock, self._exclusive():
            m = self.get(memory_id)
            strength = min(2.0, m.strength + 0.1) if boost_strength else m.strength
            return self.put(replace(m, last_used=ts, use_count=m.use_count + 1, strength=strength))

    # -- relations -----------------------------------------------------------------------------
    def add_relation(
        self,
        from_memory_id: str,
        to_memory_id: str,
        relation_type: str = "related",
        *,
        strength: float = 1.0,
        metadata: Mapping[str, Any] | None = None,
        now: float | None = None,
    ) -> Relation:
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidInputError("relation metadata must be an object (a mapping)")
        relation = Relation(
            id=new_id(),
            from_memory_id=from_memory_id,
            to_memory_id=to_memory_id,
            relation_type=relation_type,
            strength=strength,
            created_at=int(time.time() if now is None else now),
            metadata=dict(metadata or {}),
        )
        return self.put_relation(relation)

    def put_relation(self, relation: Relation) -> Relation:
        """Insert or replace a relation between two existing memories."""
        relation, line = self._validate_relation(relation)
        with self._lock, self._exclusive():
            self.get(relation.from_memory_id)
            self.get(relation.to_memory_id)
            self._persist_relations([relation], [line])
            self._index_relation(relation)
        return relation

    def relations(
        self, memory_id: str | None = None, relation_type: str | None = None
    ) -> list[Relation]:
        with self._lock:
            self._sync()
            if memory_id is None:
                rels = list(self._relations.values())
            else:
                rels = [self._relations[r] for r in self._relations_by_memory.get(memory_id, ())]
            if relation_type is not None:
                rels = [r for r in rels if r.relation_type == relation_type]
            return sorted(rels, key=lambda r: (r.created_at, r.id))

    def delete_relation(self, relation_id: str) -> None:
        validate_id(relation_id, "relation id")
        with self._lock, self._exclusive():
            self._sync()
            if relation_id not in self._relations:
                raise RelationNotFoundError(f"no relation with id {relation_id!r}")
            self._persist_deletions([], [relation_id])
            self._unindex_relation(relation_id)

    # -- search --------------------------------------------------------------------------------
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
    ) -> list[SearchResult]:
        """Relevance first (BM25, fused with embeddings when available), re-ranked by decay."""
        from storage.search import run_search

        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= 1000:
            raise InvalidInputError(f"top_k must be an integer from 1 to 1000, got {top_k!r}")
        ts = time.time() if now is None else now
        with self._lock:
            self._sync()
            return run_search(
                self, query, validate_tags(tags), top_k, window_days, min_score, status, ts,
                use_embeddings,
            )  # fmt: skip

    # -- stats ---------------------------------------------------------------------------------
    def stats(self, now: float | None = None) -> StoreStats:
        ts = time.time() if now is None else now
        with self._lock:
            self._sync()
            active = [self._memories[i] for i in self._by_status[MemoryStatus.ACTIVE]]
            scores = [memory_score(m, ts, self.config.decay) for m in active]
            return StoreStats(
                memories=len(self._memories),
                active=len(active),
                promoted=len(self._by_status[MemoryStatus.PROMOTED]),
                archived=len(self._by_status[MemoryStatus.ARCHIVED]),
                relations=len(self._relations),
                danger_zone=sum(in_danger_zone(s, self.config.decay) for s in scores),
                below_forget_threshold=sum(s < self.config.decay.forget_threshold for s in scores),
                quarantined_lines=self.quarantined_lines,
                file_bytes=self._file_bytes(),
                tags=len(self._by_tag),
                entities=len(self._by_entity),
            )

    def compact(self) -> CompactionReport:
        n = len(self)
        return CompactionReport(n, len(self._relations), 0, 0, 0, 0)

    def age_days(self, memory: Memory, now: float) -> float:
        return max(0.0, (now - memory.created_at) / DAY)


class InMemoryStore(IndexedStore):
    """The same store with nothing on disk: for agents' tests and dry runs."""

    @classmethod
    def copy_of(cls, store: MemoryStore) -> InMemoryStore:
        """A scratch copy of another store's records (a dry run works on this)."""
        clone = cls(store.config, dense=getattr(store, "dense", None))
        clone._load(store.list(), store.relations())
        return clone


__all__ = [
    "CompactionReport",
    "DenseScorer",
    "InMemoryStore",
    "IndexedStore",
    "MemoryStore",
    "StoreStats",
    "content_hash",
    "searchable_text",
]
