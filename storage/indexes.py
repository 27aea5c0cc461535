"""The in-memory view of a store: records by id and the indexes searches and filters use.

``StoreIndexes`` keeps memories and relations with id, tag, entity, status and BM25 text
indexes. ``_load`` indexes a whole set of records in one pass (the hot path of opening a big
store); ``_index_memory`` / ``_unindex_memory`` keep everything in step one record at a time.
Search reads them through the public read-only views (``memories_by_id``, ``text_index``,
``ids_by_tag`` ...; storage.search.SearchableStore names them) and keeps its bookkeeping of the
dense index in ``dense_sync``. The tag and entity indexes themselves are storage.label_index's.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping

from cortexgraph.storage.deferred_text import DeferredText
from cortexgraph.storage.label_index import LabelIndex, entity_keys, ids_by, index_labels
from cortexgraph.storage.models import Memory, MemoryStatus, Relation
from cortexgraph.storage.text_index import TextIndex

_ID = operator.attrgetter("id")
_KEYS = operator.attrgetter("meta.tags", "entities", "status")
_TAGS = operator.attrgetter("meta.tags")
_ENTITIES = operator.attrgetter("entities")
_STATUS = operator.attrgetter("status")
_LABELS = operator.attrgetter("meta.tags", "entities")
_CONTENT = operator.attrgetter("content")
_CONTEXT = operator.attrgetter("ranking_context")  # the user's context, a neighbour's text
_Keys = tuple[tuple[str, ...], tuple[str, ...], MemoryStatus]  # tags, entities, status


class DenseSyncState:
    """How far each dense index's rows have followed this store's text index change journal
    (storage.dense_search.sync_dense reads and advances it; one per store)."""

    __slots__ = ("dense_at", "pending")

    def __init__(self) -> None:
        # id(dense) -> (serial of the TextIndex, journal version)
        self.dense_at: dict[int, tuple[int, int]] = {}
        # id(dense) -> ids changed but not embedded yet (left for the background embedder)
        self.pending: dict[int, set[str]] = {}


def searchable_text(memory: Memory) -> str:
    """What the text index sees: content plus tags and entities (tags split on '/', '-', '_')."""
    return f"{memory.content}\n{_label_text(memory.tags, memory.entities)}"


def _label_text(tags: tuple[str, ...], entities: tuple[str, ...]) -> str:
    """The part of ``searchable_text`` after the content."""
    extras = " ".join(tags) + " " + " ".join(entities)
    return extras.replace("/", " ").replace("_", " ").replace("-", " ")


def text_index_of(memories: Mapping[str, Memory]) -> TextIndex:
    """A text index of ``memories`` built afresh (what an open from the JSONL builds)."""
    text = TextIndex()
    labels = {key: _label_text(*key) for key in ids_by(memories, _LABELS)}
    _add_texts(text, memories, labels)
    return text


def _add_texts(
    text: TextIndex,
    memories: Mapping[str, Memory],
    labels: Mapping[tuple[tuple[str, ...], tuple[str, ...]], str],
) -> None:
    """``searchable_text`` of many memories in two parts: content, and tags and entities
    (``labels``: one string per distinct pair)."""
    loaded = memories.values()
    text.add_many_columns(
        list(memories),
        list(map(_CONTENT, loaded)),
        list(map(labels.__getitem__, map(_LABELS, loaded))),
        list(map(_CONTEXT, loaded)),
    )


class StoreIndexes:
    """Records and their indexes. Not thread-safe: the store serialises access."""

    def __init__(self) -> None:
        self._memories: dict[str, Memory] = {}
        self._relations: dict[str, Relation] = {}
        # Each waits to be built from ``_memories`` on first use in a store opened from its
        # snapshot (``_index_deferring_labels``): a consolidation run never looks a memory up
        # by entity or tag, and building the entity index cost ~0.25 CPU s at 100k memories
        # (54k distinct entity lists), the tag index 1.4 ms of a 10k store's open.
        self._tags = LabelIndex(_TAGS)
        self._entities = LabelIndex(_ENTITIES, entity_keys)
        self._by_status: dict[MemoryStatus, set[str]] = {s: set() for s in MemoryStatus}
        self._relations_by_memory: dict[str, set[str]] = {}
        # A DeferredText while the index snapshot's text index waits for its first use
        # (``text_index``): until then its changes are kept in order, not applied.
        self._text: TextIndex | DeferredText = TextIndex()
        self.dense_sync = DenseSyncState()
        # Each memory's place in the order it was first saved: ``_memories``' order, which is
        # its file's line order (a reopen keeps a record at its first line; compaction writes
        # in this order). Whole-second ``created_at`` ties among a burst of saves are broken by
        # it, not by the random id. Built on first use (``save_order``), then kept up to date.
        self._save_order: dict[str, int] | None = None
        self._saves = 0
        # The same for relations: ``_relations``' order is their file's first lines (a replaced
        # one keeps its place), and ties of ``created_at`` go by it (``relation_order``).
        self._relation_order: dict[str, int] | None = None
        self._relation_saves = 0

    # -- read-only views for search: the caller holds the store's lock and must not change them
    @property
    def memories_by_id(self) -> Mapping[str, Memory]:
        return self._memories

    @property
    def save_order(self) -> Mapping[str, int]:
        """Id -> place in the order the memories were first saved (a later save, higher)."""
        if self._save_order is None:
            self._save_order = dict(zip(self._memories, range(len(self._memories)), strict=True))
            self._saves = len(self._memories)
        return self._save_order

    @property
    def relation_order(self) -> Mapping[str, int]:
        """Relation id -> place in the order the relations were first saved (later, higher)."""
        if self._relation_order is None:
            held = self._relations
            self._relation_order = dict(zip(held, range(len(held)), strict=True))
            self._relation_saves = len(held)
        return self._relation_order

    def _note_saved(self, memory_id: str) -> None:
        """``memory_id`` was just added to ``_memories`` (at its end)."""
        if self._save_order is not None:
            self._save_order[memory_id] = self._saves
            self._saves += 1

    @property
    def text_index(self) -> TextIndex:
        text = self._text
        if type(text) is DeferredText:
            # unpickled, or (its bytes failed to unpickle) built from the memories held now
            text = text.index() or text_index_of(self._memories)
            self._text = text
        return text  # type: ignore[return-value]

    def _load_text_if_due(self) -> None:
        if type(self._text) is DeferredText and self._text.due:
            self.text_index  # noqa: B018  (loads it: the changes kept so far are applied)

    @property
    def ids_by_tag(self) -> Mapping[str, set[str]]:
        """Lower-cased tag -> ids."""
        return self._by_tag

    @property
    def tags_indexed(self) -> bool:
        """Whether the tag index is built (False: deferred to its first use)."""
        return not self._tags.deferred

    @property
    def _by_tag(self) -> dict[str, set[str]]:
        return self._tags.built(self._memories)

    @property
    def ids_by_entity(self) -> Mapping[str, set[str]]:
        """Lower-cased entity -> ids."""
        return self._by_entity

    @property
    def entities_indexed(self) -> bool:
        """Whether the entity index is built (False: deferred to its first use)."""
        return not self._entities.deferred

    @property
    def _by_entity(self) -> dict[str, set[str]]:
        return self._entities.built(self._memories)

    @property
    def ids_by_status(self) -> Mapping[MemoryStatus, set[str]]:
        return self._by_status

    def _load(self, memories: Iterable[Memory], relations: Iterable[Relation]) -> None:
        """Index a whole snapshot (load, reload, copy); the last record per id wins."""
        fresh: dict[str, Memory] = {}
        if self._memories:
            for m in memories:
                if m.id in self._memories:
                    self._index_memory(m)
                else:
                    fresh[m.id] = m
        else:  # opening: the C loops of dict(zip(...)) (last record per id, first position)
            memories = list(memories)
            fresh = dict(zip(map(_ID, memories), memories, strict=True))
        groups = self._index_keys(fresh)
        self._memories.update(fresh)
        for mid in fresh:
            self._note_saved(mid)
        if fresh:  # (none: a relations file loaded beside a deferred text index)
            labels = {key[:2]: _label_text(*key[:2]) for key in groups}
            _add_texts(self.text_index, fresh, labels)
        if self._relations or self._relation_order is not None:
            for r in relations:
                self._index_relation(r)
        else:
            self._index_relations_afresh(relations)

    def _index_keys(self, memories: Mapping[str, Memory]) -> dict[_Keys, list[str]]:
        """Add many memories to the tag and entity (unless deferred) and status indexes; their
        ids by keys.

        Memories sharing tags, entities and status (most of a big store) are indexed as one
        group: a set update per key instead of a set add per memory and key."""
        groups: dict[_Keys, list[str]] = ids_by(memories, _KEYS)
        self._index_tags_and_status(
            (tags, status, ids) for (tags, _, status), ids in groups.items()
        )
        if not self._entities.deferred:
            index_labels(self._entities.ids, memories, _ENTITIES, entity_keys)
        return groups

    def _index_deferring_labels(self, memories: Mapping[str, Memory]) -> None:
        """Index the whole store, just installed, by status; by tag and entity on first use."""
        self._entities.deferred = self._tags.deferred = True
        by_status = self._by_status
        for status, ids in ids_by(memories, _STATUS).items():
            by_status[status].update(ids)

    def _index_tags_and_status(
        self, groups: Iterable[tuple[tuple[str, ...], MemoryStatus, list[str]]]
    ) -> None:
        """Add groups of memories sharing tags and status: a set update per key and group."""
        by_tag, by_status = None if self._tags.deferred else self._tags.ids, self._by_status
        for tags, status, ids in groups:
            if by_tag is not None:
                for tag in tags:
                    by_tag.setdefault(tag.lower(), set()).update(ids)
            by_status[status].update(ids)

    def _index_memory(self, memory: Memory) -> None:
        old = self._memories.get(memory.id)
        # The text index holds exactly the ids ``_memories`` holds, so the memory's text is
        # there to keep only when it replaces one with the same text (asked of the records,
        # not of the index: a deferred one cannot say).
        text_kept = False
        if old is not None:
            text_kept = (
                old.content == memory.content
                and old.tags == memory.tags
                and old.entities == memory.entities
                and old.ranking_context == memory.ranking_context
            )
            self._unindex_memory(old, keep_text=text_kept, replacing=True)
        else:
            self._note_saved(memory.id)
        self._memories[memory.id] = memory  # a replaced one keeps its place (save order)
        self._tags.add(memory)
        self._entities.add(memory)
        self._by_status[memory.status].add(memory.id)
        if not text_kept:
            self._text.add(memory.id, searchable_text(memory), context=memory.ranking_context)
            self._load_text_if_due()

    def _unindex_memory(
        self, memory: Memory, keep_text: bool = False, replacing: bool = False
    ) -> None:
        if not replacing:
            self._memories.pop(memory.id, None)
            if self._save_order is not None:
                self._save_order.pop(memory.id, None)
        self._tags.discard(memory)
        self._entities.discard(memory)
        self._by_status[memory.status].discard(memory.id)
        if not keep_text:
            self._text.remove(memory.id)
            self._load_text_if_due()

    def _index_relation(self, relation: Relation) -> None:
        held = self._relations.get(relation.id)
        if held is not None:
            self._unlink_relation(held)  # a replaced one keeps its place (save order)
        elif self._relation_order is not None:
            self._relation_order[relation.id] = self._relation_saves
            self._relation_saves += 1
        self._relations[relation.id] = relation
        self._relations_by_memory.setdefault(relation.from_memory_id, set()).add(relation.id)
        self._relations_by_memory.setdefault(relation.to_memory_id, set()).add(relation.id)

    def _index_relations_afresh(self, relations: Iterable[Relation]) -> None:
        """``_index_relation`` of each into empty relation indexes, in two plain loops (no
        call per relation: a third of loading a 10k store's relations snapshot)."""
        rows = list(relations)
        # the last record per id at the first one's place, as ``_index_relation`` keeps them
        self._relations.update(zip(map(_ID, rows), rows, strict=True))
        by_memory = self._relations_by_memory
        for rid, r in self._relations.items():
            for mid in (r.from_memory_id, r.to_memory_id):
                held = by_memory.get(mid)
                if held is None:
                    by_memory[mid] = {rid}
                else:
                    held.add(rid)

    def _unindex_relation(self, relation_id: str) -> None:
        relation = self._relations.pop(relation_id, None)
        if relation is None:
            return
        if self._relation_order is not None:
            self._relation_order.pop(relation_id, None)
        self._unlink_relation(relation)

    def _unlink_relation(self, relation: Relation) -> None:
        """Drop ``relation`` from its memories' lists (it stays in ``_relations``)."""
        relation_id = relation.id
        for mid in (relation.from_memory_id, relation.to_memory_id):
            ids = self._relations_by_memory.get(mid)
            if ids is not None:
                ids.discard(relation_id)
                if not ids:
                    del self._relations_by_memory[mid]

    def _clear_indexes(self) -> None:
        self._memories.clear()
        self._save_order = None
        self._relations.clear()
        self._relation_order = None
        self._tags.clear()
        self._entities.clear()
        for ids in self._by_status.values():
            ids.clear()
        self._relations_by_memory.clear()
        self._text = TextIndex()


__all__ = ["DenseSyncState", "StoreIndexes", "searchable_text", "text_index_of"]
