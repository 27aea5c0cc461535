"""The store implemented on in-memory indexes.

``IndexedStore`` implements every ``MemoryStore`` operation on top of ``StoreHooks``: the
indexes, the lock and three persistence hooks (storage.store_hooks); ``InMemoryStore``
(storage.memory_store) uses no-op hooks, ``JSONLStore`` (storage.jsonl_store) appends to files.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from operator import attrgetter
from typing import Any

from cortexgraph.storage.decay import DAY, in_danger_zone, memory_score
from cortexgraph.storage.errors import InvalidInputError, MemoryNotFoundError, RelationNotFoundError
from cortexgraph.storage.field_rules import short_repr
from cortexgraph.storage.models import (
    Memory,
    MemoryStatus,
    Relation,
    SearchResult,
    new_id,
    validate_id,
    validate_tags,
)
from cortexgraph.storage.protocol import CompactionReport, StoreStats
from cortexgraph.storage.reinforcement import status_after_use
from cortexgraph.storage.store_hooks import StoreHooks
from cortexgraph.storage.validation import (
    apply_changes,
    checked_memory,
    checked_relation,
    new_memory,
)

_CREATED_AT = attrgetter("created_at")


class IndexedStore(StoreHooks):
    """Records and indexes in memory; subclasses persist through the ``_persist_*`` hooks."""

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
        neighbour: str | None = None,
    ) -> Memory:
        """Save a new memory. ``context`` is the caller's own; ``neighbour`` the text saved just
        before it in the same conversation: ranked with the memory (BM25's context field and
        its embedding), never shown, merged or written to a note (storage.recent_saves)."""
        ts = int(time.time() if now is None else now)
        memory = new_memory(
            content,
            tags,
            entities,
            source,
            context,
            extra,
            strength=strength,
            now=ts,
            config=self.config,
            neighbour=neighbour,
        )
        return self.put(memory)

    def put(self, memory: Memory) -> Memory:
        return self.put_many([memory])[0]

    def put_many(self, memories: Iterable[Memory]) -> list[Memory]:
        """Insert or replace memories (all validated before anything is written)."""
        pairs = [checked_memory(m, self.config) for m in memories]
        checked = [m for m, _ in pairs]
        with self._lock:
            self._persist_memories(checked, [line for _, line in pairs])
            if logs := self._write_logs.__dict__.get("open"):
                for log in logs:
                    log.created.update(m.id for m in checked if m.id not in self._memories)
                    log.written.update(m.id for m in checked)
            for m in checked:
                self._index_memory(m)
        return checked

    def find(self, memory_id: str) -> Memory | None:
        validate_id(memory_id)
        with self._lock:
            self._sync()
            return self._memories.get(memory_id)

    def find_many(self, memory_ids: Iterable[str]) -> builtins.list[Memory]:
        """The held memories of ``memory_ids``, in their order (missing ones left out): the
        files are checked for other writers once, not once per id as ``find`` does."""
        ids = [validate_id(i) for i in memory_ids]
        with self._lock:
            self._sync()
            held = self._memories
            return [m for m in map(held.get, ids) if m is not None]

    def get(self, memory_id: str) -> Memory:
        memory = self.find(memory_id)
        if memory is None:
            raise MemoryNotFoundError(f"no memory with id {memory_id!r}")
        return memory

    def update(self, memory_id: str, **changes: Any) -> Memory:
        """Change fields of a memory; ``tags``, ``source``, ``context``, ``extra`` edit its meta."""
        with self._lock, self._exclusive():
            return self.put(apply_changes(self.get(memory_id), changes))

    def update_many(self, changes: Mapping[str, Mapping[str, Any]]) -> list[Memory]:
        """``update`` for many memories (id -> changes) under one lock and one append."""
        with self._lock, self._exclusive():
            return self.put_many([apply_changes(self.get(i), dict(c)) for i, c in changes.items()])

    def modify(self, memory_id: str, change: Callable[[Memory], Memory | None]) -> Memory:
        """Read-modify-write of one memory under one hold of the write lock: ``change`` gets
        the record as stored now (other processes' writes included) and returns the new one,
        or None to leave it; no other writer can come in between. Returns what is stored."""
        with self.writing():
            current = self.get(memory_id)
            new = change(current)
            if new is None or new == current:
                return current
            return self.put(new)

    def modify_many(
        self, memory_ids: Iterable[str], change: Callable[[Memory], Memory | None]
    ) -> builtins.list[Memory]:
        """``modify`` for each of ``memory_ids`` that is stored (unknown ids are skipped),
        under one hold of the lock and one append; returns the records written."""
        with self.writing():
            found = [m for m in map(self.find, dict.fromkeys(memory_ids)) if m is not None]
            changed = [n for m in found if (n := change(m)) is not None and n != m]
            return self.put_many(changed) if changed else []

    def delete(self, memory_id: str) -> None:
        """Delete a memory and every relation that touches it."""
        with self._lock, self._exclusive():
            memory = self.get(memory_id)
            rel_ids = sorted(self._relations_by_memory.get(memory_id, ()))
            self._persist_deletions([memory_id], rel_ids)
            for log in self._write_logs.__dict__.get("open", ()):
                log.written.add(memory_id)
                log.relations.update(rel_ids)
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

    def save_ranks(self, memory_ids: Iterable[str]) -> dict[str, int]:
        """Each held id's place in the order the memories were first saved (a later save,
        higher): the same in every process and after a reopen. It breaks ties of whole-second
        ``created_at`` (a burst of saves shares one second). Ids not held are left out."""
        with self._lock:
            self._sync()
            order = self.save_order
            return {i: order[i] for i in memory_ids if i in order}

    def ids_with_entity(self, entity: str) -> set[str]:
        with self._lock:
            self._sync()
            return set(self._by_entity.get(entity.lower(), ()))

    def touch(
        self, memory_id: str, *, boost_strength: bool = False, now: float | None = None
    ) -> Memory:
        """Record a use: last_used = now, use_count + 1, optionally strength + 0.1 (max 2);
        a memory gc archived is active again (``reinforcement.status_after_use``)."""
        ts = int(time.time() if now is None else now)
        with self._lock, self._exclusive():
            m = self.get(memory_id)
            strength = min(2.0, m.strength + 0.1) if boost_strength else m.strength
            return self.put(
                replace(
                    m,
                    last_used=ts,
                    use_count=m.use_count + 1,
                    strength=strength,
                    status=status_after_use(m),
                )
            )

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
        return self.put_relations([relation])[0]

    def put_relations(self, relations: Iterable[Relation]) -> builtins.list[Relation]:
        """``put_relation`` for many under one lock and one append: all are validated, and
        every end is checked to exist, before anything is written."""
        pairs = [checked_relation(r, self.config) for r in relations]
        checked = [r for r, _ in pairs]
        with self._lock, self._exclusive():
            for relation in checked:
                self.get(relation.from_memory_id)
                self.get(relation.to_memory_id)
            self._persist_relations(checked, [line for _, line in pairs])
            for log in self._write_logs.__dict__.get("open", ()):
                log.relations.update(r.id for r in checked)
            for relation in checked:
                self._index_relation(relation)
        return checked

    def relations(
        self, memory_id: str | None = None, relation_type: str | None = None
    ) -> builtins.list[Relation]:
        """Oldest first; the relations of one second (``created_at``'s unit) in the order they
        were first saved, the same in every process and after a reopen (no random id decides)."""
        with self._lock:
            self._sync()
            if memory_id is None:
                rels = list(self._relations.values())  # in save order
            else:
                ids, order = self._relations_by_memory.get(memory_id, ()), self.relation_order
                rels = [self._relations[r] for r in sorted(ids, key=order.__getitem__)]
            if relation_type is not None:
                rels = [r for r in rels if r.relation_type == relation_type]
            return sorted(rels, key=_CREATED_AT)  # stable: save order within a second

    def delete_relation(self, relation_id: str) -> None:
        validate_id(relation_id, "relation id")
        with self._lock, self._exclusive():
            self._sync()
            if relation_id not in self._relations:
                raise RelationNotFoundError(f"no relation with id {relation_id!r}")
            self._persist_deletions([], [relation_id])
            for log in self._write_logs.__dict__.get("open", ()):
                log.relations.add(relation_id)
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
    ) -> builtins.list[SearchResult]:
        """Relevance first (BM25, fused with embeddings when available), re-ranked by decay."""
        from cortexgraph.storage.search import SearchRequest, run_search

        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= 1000:
            raise InvalidInputError(
                f"top_k must be an integer from 1 to 1000, got {short_repr(top_k)}"
            )
        ts = time.time() if now is None else now
        with self._lock:
            self._sync()
            request = SearchRequest(
                now=ts,
                query=query,
                tags=validate_tags(tags),
                top_k=top_k,
                window_days=window_days,
                min_score=min_score,
                status=status,
                use_embeddings=use_embeddings,
            )
            return run_search(self, request)

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


__all__ = ["IndexedStore"]
