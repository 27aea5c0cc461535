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


def __getattr__(name: str) -> str:
    """``__version__`` is pyproject.toml's, read from the installed metadata when first asked."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("cortexgraph")
        except PackageNotFoundError:  # a source tree that is not installed
            return "0+unknown"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
