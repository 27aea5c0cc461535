"""The tag and entity indexes of a store: lower-cased label -> ids, built in groups of memories.

``LabelIndex`` is one such index, which may wait to be built on its first use; ``entity_keys``
says under which keys an entity is found (a versioned name under its bare name too). They are
apart from storage.indexes because they stand on the records alone: ``StoreIndexes`` holds two
of them beside its status, relation and text indexes, and ``ids_by`` is the grouping both use.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from cortexgraph.storage.models import Memory


def ids_by(memories: Mapping[str, Memory], key: Callable[[Memory], Any]) -> dict[Any, list[str]]:
    """The memories' ids grouped by ``key`` of each: most of a big store shares a few tag,
    entity and status lists, so an index takes a set update per group, not an add per memory."""
    groups: dict[Any, list[str]] = {}
    for mid, k in zip(memories, map(key, memories.values()), strict=True):
        group = groups.get(k)
        if group is None:
            groups[k] = [mid]
        else:
            group.append(mid)
    return groups


# A name with a version after it ("Postgres 16", "Python 3.11", "iOS 17", "v2") is that name:
# a question about Postgres is about a memory of Postgres 16. A year ("Pride 2022", "May
# 2023") is not a version: it names a time, and "may" is also a word of any question.
_VERSION = re.compile(r"v?\d{1,3}(?:\.\d+)*")


def entity_keys(label: str) -> tuple[str, ...]:
    """The entity index's keys for one entity: its lower-cased name, and for a versioned name
    the name without its version too."""
    key = label.lower()
    name, _, version = key.rpartition(" ")
    if name and _VERSION.fullmatch(version) and any(ch.isalpha() for ch in name):
        return (key, name)
    return (key,)


def _tag_keys(label: str) -> tuple[str, ...]:
    return (label.lower(),)


def index_labels(
    index: dict[str, set[str]],
    memories: Mapping[str, Memory],
    key: Callable[[Memory], Any],
    keys_of: Callable[[str], tuple[str, ...]],
) -> None:
    """Add many memories to a tag or entity ``index`` (``keys_of`` each label -> ids), grouped
    by their label lists (``key``): a set update per key and group."""
    for labels, ids in ids_by(memories, key).items():
        for label in labels:
            for k in keys_of(label):
                index.setdefault(k, set()).update(ids)


class LabelIndex:
    """A tag or entity index (lower-cased label -> ids) that may wait to be built from the
    memories on its first use (``deferred``); while it waits, changes to single memories
    pass it by, as the build reads the memories as they are then."""

    __slots__ = ("deferred", "ids", "key", "keys_of")

    def __init__(
        self,
        key: Callable[[Memory], tuple[str, ...]],
        keys_of: Callable[[str], tuple[str, ...]] = _tag_keys,
    ) -> None:
        self.ids: dict[str, set[str]] = {}
        self.deferred = False
        self.key = key
        self.keys_of = keys_of  # one label's keys in the index

    def built(self, memories: Mapping[str, Memory]) -> dict[str, set[str]]:
        if self.deferred:
            self.deferred = False
            index_labels(self.ids, memories, self.key, self.keys_of)
        return self.ids

    def add(self, memory: Memory) -> None:
        if not self.deferred:
            for label in self.key(memory):
                for k in self.keys_of(label):
                    self.ids.setdefault(k, set()).add(memory.id)

    def discard(self, memory: Memory) -> None:
        if self.deferred:
            return
        index = self.ids
        for label in self.key(memory):
            for k in self.keys_of(label):
                ids = index.get(k)
                if ids is not None:
                    ids.discard(memory.id)
                    if not ids:
                        del index[k]

    def clear(self) -> None:
        self.ids.clear()
        self.deferred = False


__all__ = ["LabelIndex", "entity_keys", "ids_by", "index_labels"]
