"""What a store's operations stand on: its lock, the hooks a subclass persists through, and
holding or recording writes.

``StoreHooks`` adds to ``StoreIndexes`` the store's settings, the lock every operation takes,
the persistence hooks (``_persist_*``, ``_sync``, ``_file_bytes``, ``_exclusive``: no-ops
here) and the holding or recording of a caller's writes (``writing``, ``recording_writes``).
It is apart from storage.indexed_store because it is the contract a store fills in, on files
(storage.jsonl_store) or on nothing (storage.memory_store), where ``IndexedStore`` is the
operations over it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.indexes import StoreIndexes
from cortexgraph.storage.models import Memory, Relation
from cortexgraph.storage.protocol import DenseScorer, WriteLog


class StoreHooks(StoreIndexes):
    """Records and indexes under one lock, with the hooks a store persists through."""

    def __init__(self, config: StoreConfig | None = None, dense: DenseScorer | None = None) -> None:
        super().__init__()
        self.config = config or StoreConfig()
        self.dense = dense
        self._lock = threading.RLock()
        self.quarantined_lines = 0
        self._write_logs = threading.local()  # recording_writes: per thread, the open logs

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

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Several writes as one hold of the store (a merge: memory, relations, sources): no
        other writer in between, and the lock is taken once instead of once a write."""
        with self._lock, self._exclusive():
            yield

    @contextlib.contextmanager
    def recording_writes(self) -> Iterator[WriteLog]:
        """What this thread saves, changes or deletes through this store while open. Per
        thread: a consolidation run tells its own writes from what another caller (a save in
        the MCP server beside it) or another process (read as it catches up) wrote meanwhile,
        which the next incremental run must still see as changed."""
        logs: list[WriteLog] = self._write_logs.__dict__.setdefault("open", [])
        log = WriteLog()
        logs.append(log)
        try:
            yield log
        finally:
            logs.remove(log)


__all__ = ["StoreHooks"]
