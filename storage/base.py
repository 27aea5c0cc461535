"""The store interface and the in-memory store, under their historical import path.

Split by concern: ``storage.protocol`` (the ``MemoryStore`` Protocol, ``StoreStats``,
``CompactionReport``, ``DenseScorer``), ``storage.validation`` (what may be stored),
``storage.indexes`` (records and indexes), ``storage.memory_store`` (``IndexedStore``,
``InMemoryStore``). Everything importable from here before the split still is.
"""

from __future__ import annotations

from cortexgraph.storage.indexes import StoreIndexes, searchable_text
from cortexgraph.storage.memory_store import IndexedStore, InMemoryStore
from cortexgraph.storage.protocol import CompactionReport, DenseScorer, MemoryStore, StoreStats
from cortexgraph.storage.validation import content_hash

__all__ = [
    "CompactionReport",
    "DenseScorer",
    "InMemoryStore",
    "IndexedStore",
    "MemoryStore",
    "StoreIndexes",
    "StoreStats",
    "content_hash",
    "searchable_text",
]
