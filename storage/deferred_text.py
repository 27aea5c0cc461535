"""A snapshot's text index left unread until its first use, and what may be unpickled from a
snapshot at all (storage.index_snapshot reads and writes the snapshots).

A consolidation run never searches, and reading, checking and unpickling the BM25 index was
a sixth of opening a 10k store from its snapshot (unpickling alone 0.015 CPU s of 0.09). The
snapshot keeps the index's pickled bytes after its body (``StoredBytes``): an open takes a
handle on them, and the first search reads them, checks their own check value and unpickles
them (``DeferredText.index``). Until then the store's changes to the index (the lines past the
snapshot, a run's own writes) are kept in order and replayed then: the same calls in the same
order, so the index, its change journal (dense indexes follow it) and every score are what
loading it at once gave. A handle outlives a later rewrite of the snapshot file (a rename:
the bytes it holds stay those of the file it was opened on).
"""

from __future__ import annotations

import io
import logging
import os
import pickle
import zlib
from typing import Any

from cortexgraph.storage.text_index import TextIndex

log = logging.getLogger(__name__)

# Older formats are refused by the header before their body is unpickled: no Memory here.
_ALLOWED = {
    ("cortexgraph.storage.memory_fields", "MemoryStatus"),
    ("cortexgraph.storage.postings", "PostingsField"),
    ("cortexgraph.storage.postings", "Segment"),
    ("collections", "Counter"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("numpy", "dtype"),
    ("numpy", "ndarray"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy.core.numeric", "_frombuffer"),
}
# Changes kept for a deferred index before it is loaded anyway (a process that writes for
# days and never searches would otherwise keep every text it wrote).
MAX_DEFERRED_CHANGES = 20_000


class SnapshotUnpickler(pickle.Unpickler):
    """Only classes of this package, numpy arrays and builtin containers: a planted snapshot
    cannot run code."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a snapshot")
        return super().find_class(module, name)


def crc_hex(crc: int) -> str:
    """A CRC-32 as a snapshot's header writes it (``digest``, ``body_digest``, ``tail_digest``)."""
    return f"{crc:08x}"


def digest(data: bytes | memoryview) -> str:
    return crc_hex(zlib.crc32(data))


class StoredBytes:
    """``size`` bytes at ``offset`` of an open snapshot file, and their check value: read on
    demand (``read``), once. Holds its own descriptor of the file until then."""

    __slots__ = ("_check", "_fd", "_offset", "_size")

    def __init__(self, fd: int, offset: int, size: int, check: str) -> None:
        self._fd: int | None = os.dup(fd)
        self._offset, self._size, self._check = offset, size, check

    def read(self) -> bytes | None:
        """The bytes, or None if they are not what was written (a damaged file)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return None
        try:
            data = os.pread(fd, self._size, self._offset)
        except OSError as exc:
            log.warning("cortexgraph: snapshot text index unreadable (%s)", exc)
            return None
        finally:
            os.close(fd)
        return data if len(data) == self._size and digest(data) == self._check else None

    def __del__(self, _close: Any = os.close) -> None:  # (bound now: still there at exit)
        if self._fd is not None:
            _close(self._fd)


class DeferredText:
    """A store's text index as its snapshot holds it: the slot ids, and the rest pickled
    (bytes, or ``StoredBytes`` still in the file), unpickled on first use (``index``)."""

    __slots__ = ("_changes", "_rest", "_slot_ids")

    def __init__(self, slot_ids: list[str | None], rest: bytes | StoredBytes) -> None:
        self._slot_ids = slot_ids
        self._rest = rest
        self._changes: list[tuple[str, str | None, str | None]] = []

    @property
    def due(self) -> bool:
        """Kept enough changes: load it now (``StoreIndexes`` asks after each change)."""
        return len(self._changes) >= MAX_DEFERRED_CHANGES

    def _bytes(self) -> bytes | None:
        if isinstance(self._rest, StoredBytes):
            read = self._rest.read()
            if read is None:
                return None
            self._rest = read
        return self._rest

    def parts(self) -> tuple[list[str | None], bytes] | None:
        """The slot ids and the pickled rest, as a snapshot of this index stores them; None
        once it has changed (or its bytes are damaged): snapshot the loaded index then."""
        rest = None if self._changes else self._bytes()
        return None if rest is None else (self._slot_ids, rest)

    def copy(self) -> DeferredText | None:
        """One that later changes here leave as it is (its bytes read now: a handle is read
        once); None if they are damaged."""
        rest = self._bytes()
        if rest is None:
            return None
        new = DeferredText(list(self._slot_ids), rest)
        new._changes = list(self._changes)
        return new

    def add(self, doc_id: str, text: str, context: str | None = None) -> None:
        self._changes.append((doc_id, text, context))

    def remove(self, doc_id: str) -> None:
        self._changes.append((doc_id, None, None))

    def index(self) -> TextIndex | None:
        """The index, the changes applied; None if the bytes are damaged or do not unpickle
        to one (the caller rebuilds it from its memories)."""
        rest = self._bytes()
        try:
            if rest is None:
                raise ValueError("its bytes fail their check value")
            text = TextIndex.from_parts(self._slot_ids, SnapshotUnpickler(io.BytesIO(rest)).load())
        except Exception as exc:  # damage, or a bug: the memories still say what to index
            log.warning("cortexgraph: snapshot text index unusable (%s); rebuilding it", exc)
            return None
        for doc_id, body, context in self._changes:
            if body is None:
                text.remove(doc_id)
            else:
                text.add(doc_id, body, context)
        return text


__all__ = [
    "MAX_DEFERRED_CHANGES",
    "DeferredText",
    "SnapshotUnpickler",
    "StoredBytes",
    "crc_hex",
    "digest",
]
