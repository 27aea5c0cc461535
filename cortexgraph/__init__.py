"""cortexgraph: temporal, human-like memory for AI assistants.

The public Python API. ``open_store`` opens a short-term memory store; see README.md.
"""

from __future__ import annotations

from cortexgraph.storage import (
    InMemoryStore,
    JSONLStore,
    Memory,
    MemoryStatus,
    MemoryStore,
    Relation,
    SearchResult,
    StoreConfig,
    open_store,
)

__version__ = "2.0.0.dev0"

__all__ = [
    "InMemoryStore",
    "JSONLStore",
    "Memory",
    "MemoryStatus",
    "MemoryStore",
    "Relation",
    "SearchResult",
    "StoreConfig",
    "__version__",
    "open_store",
]
