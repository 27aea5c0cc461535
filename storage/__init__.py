"""cortexgraph's short-term memory store. Imports nothing else of cortexgraph.

from cortexgraph.storage import open_store
store = open_store("~/.config/cortexgraph/jsonl")
m = store.save("We chose PostgreSQL for the ledger", tags=["decision"])
store.search("ledger database")
"""

from __future__ import annotations

import os

from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.decay import DecayConfig, DecayModel, memory_score
from cortexgraph.storage.errors import (
    ContentTooLargeError,
    CortexGraphError,
    InvalidInputError,
    MemoryNotFoundError,
    NotFoundError,
    RelationNotFoundError,
    StorageError,
)
from cortexgraph.storage.indexed_store import IndexedStore
from cortexgraph.storage.jsonl_store import JSONLStore
from cortexgraph.storage.memory_store import InMemoryStore
from cortexgraph.storage.models import Memory, MemoryMeta, MemoryStatus, Relation, SearchResult
from cortexgraph.storage.protocol import CompactionReport, DenseScorer, MemoryStore, StoreStats
from cortexgraph.storage.validation import validate_new_memory


def open_store(
    path: str | os.PathLike[str],
    config: StoreConfig | None = None,
    dense: DenseScorer | None = None,
) -> JSONLStore:
    """Open (creating if needed) the JSONL store in directory ``path``."""
    return JSONLStore(path, config=config, dense=dense)


__all__ = [
    "CompactionReport",
    "ContentTooLargeError",
    "CortexGraphError",
    "DecayConfig",
    "DecayModel",
    "DenseScorer",
    "InMemoryStore",
    "IndexedStore",
    "InvalidInputError",
    "JSONLStore",
    "Memory",
    "MemoryMeta",
    "MemoryNotFoundError",
    "MemoryStatus",
    "MemoryStore",
    "NotFoundError",
    "Relation",
    "RelationNotFoundError",
    "SearchResult",
    "StorageError",
    "StoreConfig",
    "StoreStats",
    "memory_score",
    "open_store",
    "validate_new_memory",
]
