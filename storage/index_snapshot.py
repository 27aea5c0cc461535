"""The index snapshot: a cache of a store's loaded memories and indexes beside its JSONL, so
big stores open fast. (Not a copy of the store: see storage.memory_store's ``from_files``.)

``.cortexgraph-index.pickle`` holds the memories, the tag/entity/status indexes and the BM25
text index as they were after loading the first ``size`` bytes of ``memories.jsonl``, with the
blake2b digest of those bytes. It is used only when the memories file still starts with exactly
those bytes (the lines appended since are then applied as usual), the blake2b checksum of the
snapshot's own body matches, and it was built under the same record limits; any other file, a
different format version, or a snapshot that cannot be read is ignored and the JSONL is loaded.
Compaction never writes from the snapshot (storage.jsonl_store parses the files it rewrites).
The JSONL stays the only source of truth: deleting the snapshot loses nothing.

Only classes of this package, numpy arrays and builtin containers are unpickled
(``_SnapshotUnpickler.find_class``), so a planted file cannot run code.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import pickle
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# Bump whenever a pickled class (Memory, TextIndex, PostingsField, Segment ...) changes shape.
FORMAT = 3  # 3: the body's checksum and the record rules in the header
SNAPSHOT_NAME = ".cortexgraph-index.pickle"

_ALLOWED = {
    ("cortexgraph.storage.models", "Memory"),
    ("cortexgraph.storage.memory_fields", "MemoryMeta"),
    ("cortexgraph.storage.memory_fields", "MemoryStatus"),
    # where snapshots written before memory_fields.py name the same two classes
    ("cortexgraph.storage.models", "MemoryMeta"),
    ("cortexgraph.storage.models", "MemoryStatus"),
    ("cortexgraph.storage.text_index", "TextIndex"),
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


class _SnapshotUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a snapshot")
        return super().find_class(module, name)


def digest(data: bytes | memoryview) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def read_snapshot(directory: Path, data: bytes, rules: str = "") -> tuple[Any, int] | None:
    """(state, bytes of ``data`` it covers) if the snapshot matches a prefix of ``data``, its
    body is intact (checksum) and it was built under the same record ``rules``."""
    path = directory / SNAPSHOT_NAME
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.info("cortexgraph: snapshot %s unreadable (%s); loading the JSONL", path, exc)
        return None
    try:
        stream = io.BytesIO(blob)
        header = _SnapshotUnpickler(stream).load()
        size = header["size"]
        body = memoryview(blob)[stream.tell() :]
        if (
            header.get("format") != FORMAT
            or header.get("rules") != rules
            or not isinstance(size, int)
            or not 0 < size <= len(data)
            or header.get("digest") != digest(memoryview(data)[:size])
        ):
            return None
        if header.get("body_digest") != digest(body):
            log.warning("cortexgraph: snapshot %s fails its checksum; loading the JSONL", path)
            return None
        return _SnapshotUnpickler(io.BytesIO(body)).load(), size
    except Exception as exc:  # any damage means: not usable, load the JSONL
        log.info("cortexgraph: ignoring snapshot %s (%s: %s)", path, type(exc).__name__, exc)
        return None


def write_snapshot(directory: Path, data: bytes | memoryview, state: Any, rules: str = "") -> bool:
    """Store ``state`` as what loading ``data`` (the memories file's bytes) gives."""
    path = directory / SNAPSHOT_NAME
    tmp = path.with_name(f"{SNAPSHOT_NAME}.{os.getpid()}.tmp")
    try:
        body = pickle.dumps(state, protocol=5)
        header = {
            "format": FORMAT,
            "size": len(data),
            "digest": digest(data),
            "body_digest": digest(body),
            "rules": rules,
        }
        with tmp.open("wb") as f:
            pickle.dump(header, f, protocol=5)
            f.write(body)
        os.replace(tmp, path)  # a cache: no fsync; a torn file is ignored on read
    except (OSError, pickle.PicklingError) as exc:
        tmp.unlink(missing_ok=True)
        log.info("cortexgraph: could not write snapshot %s: %s", path, exc)
        return False
    return True


__all__ = ["FORMAT", "SNAPSHOT_NAME", "read_snapshot", "write_snapshot"]
