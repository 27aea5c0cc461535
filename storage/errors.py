"""Typed errors raised by the storage layer.

    CortexGraphError
     ├── InvalidInputError          bad content, id, tags, strength, path ... (fix the call)
     │    └── ContentTooLargeError
     ├── NotFoundError
     │    ├── MemoryNotFoundError
     │    └── RelationNotFoundError
     └── StorageError               the files themselves are unusable (permissions, disk)

Every message says what to fix. Edges (CLI, MCP, Prefect) translate these; storage never exits.
"""

from __future__ import annotations


class CortexGraphError(Exception):
    """Base class of every error cortexgraph raises on purpose."""


class InvalidInputError(CortexGraphError, ValueError):
    """An argument was rejected; the store is unchanged."""


class ContentTooLargeError(InvalidInputError):
    """Memory content is over the configured size limit."""


class NotFoundError(CortexGraphError, KeyError):
    """A record that was asked for does not exist."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class MemoryNotFoundError(NotFoundError):
    """No memory with that id."""


class RelationNotFoundError(NotFoundError):
    """No relation with that id."""


class StorageError(CortexGraphError, OSError):
    """The store's files cannot be read or written."""


__all__ = [
    "ContentTooLargeError",
    "CortexGraphError",
    "InvalidInputError",
    "MemoryNotFoundError",
    "NotFoundError",
    "RelationNotFoundError",
    "StorageError",
]
