"""The index snapshot: a cache of a store's loaded memories and indexes beside its JSONL, so
big stores open fast. (Not a copy of the store: see storage.memory_store's ``from_files``.)

``.cortexgraph-index.pickle`` holds the memories (one list per field, ``snapshot_state``) and
the BM25 text index as they were after loading the first ``size`` bytes of ``memories.jsonl``,
with a check value of those bytes; the tag, entity and status indexes are rebuilt from the
memories. It is used only when the memories file still starts with exactly those bytes (the
lines appended since are then applied as usual), the check value of the snapshot's own body
matches, and it was built under the same record limits; any other file, a different format
version, or a snapshot that cannot be read is ignored and the JSONL is loaded.
Compaction never writes from the snapshot (storage.jsonl_store parses the files it rewrites).
The JSONL stays the only source of truth: deleting the snapshot loses nothing.

The check values are CRC-32s (3.7 GB/s here against blake2b's 0.8): they are there to notice
an edited file or a torn write (an accidental match is one in four billion), not an attacker,
who could write a matching digest of any kind. What keeps a planted file harmless is the
unpickler: only classes of this package, numpy arrays and builtin containers are unpickled
(``_SnapshotUnpickler.find_class``), so a planted file cannot run code.
"""

from __future__ import annotations

import io
import logging
import os
import pickle
import threading
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from cortexgraph.storage.bulk_records import memories_from_columns, memory_columns
from cortexgraph.storage.models import Memory
from cortexgraph.storage.text_index import TextIndex

log = logging.getLogger(__name__)

# Bump whenever the state or a pickled class (TextIndex, PostingsField, Segment ...) changes shape.
FORMAT = 4  # 4: memories as columns, no tag/entity/status sets, CRC-32 checks
SNAPSHOT_NAME = ".cortexgraph-index.pickle"

# Older formats are refused by the header before their body is unpickled: no Memory here.
_ALLOWED = {
    ("cortexgraph.storage.memory_fields", "MemoryStatus"),
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
    return f"{zlib.crc32(data):08x}"


def snapshot_state(
    memories: Sequence[Memory], text: TextIndex
) -> tuple[dict[str, list[Any]], TextIndex]:
    """What a snapshot of a store holding ``memories`` and ``text`` pickles."""
    return memory_columns(memories), text


def snapshot_view(state: Any) -> tuple[dict[str, Memory], TextIndex] | None:
    """The memories by id and text index of a ``snapshot_state``, or None if ``state`` is not
    one of this version's (its memories not exactly those the text index holds)."""
    if not (
        isinstance(state, tuple)
        and len(state) == 2
        and type(state[0]) is dict
        and type(state[1]) is TextIndex
    ):
        return None
    columns, text = state
    try:
        memories = dict(zip(columns["id"], memories_from_columns(columns), strict=True))
    except (TypeError, ValueError):
        return None
    if memories.keys() != text.doc_ids():
        return None
    return memories, text


def read_snapshot(
    directory: Path, data: bytes, rules: str = "", name: str = SNAPSHOT_NAME
) -> tuple[Any, int] | None:
    """(state, bytes of ``data`` it covers) if the snapshot ``name`` matches a prefix of
    ``data``, its body is intact (checksum) and it was built under the same record ``rules``.
    (``name``: the relations' one, storage.relation_snapshot, is kept the same way.)"""
    path = directory / name
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.info("cortexgraph: snapshot %s unreadable (%s); loading the JSONL", path, exc)
        return None
    try:
        stream = io.BytesIO(blob)  # shares blob's bytes (no copy while only read)
        header = _SnapshotUnpickler(stream).load()
        size = header["size"]
        if (
            header.get("format") != FORMAT
            or header.get("rules") != rules
            or not isinstance(size, int)
            or not 0 < size <= len(data)
            or header.get("digest") != digest(memoryview(data)[:size])
        ):
            return None
        if header.get("body_digest") != digest(memoryview(blob)[stream.tell() :]):
            log.warning("cortexgraph: snapshot %s fails its checksum; loading the JSONL", path)
            return None
        return _SnapshotUnpickler(stream).load(), size  # the body, from where the header ended
    except Exception as exc:  # any damage means: not usable, load the JSONL
        log.info("cortexgraph: ignoring snapshot %s (%s: %s)", path, type(exc).__name__, exc)
        return None


def snapshot_size(directory: Path, rules: str = "", name: str = SNAPSHOT_NAME) -> int:
    """The bytes of its file the snapshot ``name`` was built from, as its header says: 0 when
    there is none, or it is unreadable, of another format or built under other ``rules``. Reads
    the header alone; whether the file still starts with those bytes is not checked (an open
    checks that, and rewrites a snapshot that does not match)."""
    try:
        with (directory / name).open("rb") as f:
            header = _SnapshotUnpickler(f).load()
        size = header["size"]
    except FileNotFoundError:
        return 0
    except Exception as exc:  # any damage means: no snapshot to count on
        log.info("cortexgraph: snapshot %s has no readable header (%s)", directory / name, exc)
        return 0
    if header.get("format") != FORMAT or header.get("rules") != rules or type(size) is not int:
        return 0
    return max(0, size)


def write_snapshot(
    directory: Path,
    data: bytes | memoryview,
    state: Any,
    rules: str = "",
    name: str = SNAPSHOT_NAME,
) -> bool:
    """Store ``state`` as what loading ``data`` (the memories file's bytes, or the relations'
    for their ``name``) gives."""
    return write_snapshot_of(directory, len(data), digest(data), state, rules, name)


def write_snapshot_of(
    directory: Path,
    size: int,
    data_digest: str,
    state: Any,
    rules: str = "",
    name: str = SNAPSHOT_NAME,
) -> bool:
    """``write_snapshot`` given the length and ``digest`` of the bytes it covers, for a caller
    that does not hold them (storage.snapshot_refresh reads them a chunk at a time).

    The body is pickled straight into the file, its check value computed on the way; the
    header, written first with a placeholder of the same length, is written again after it.
    So neither the body nor the covered bytes are ever held whole: a refresh in the MCP server
    at 100k memories raised its peak memory by ~205 MB when they were (the file's 91 MB and
    the body's 55). And the pickler hands each ~64 KB frame to ``_Body.write``, a call back
    into Python where another thread can take the interpreter's lock: one ``pickle.dumps`` of
    that state held it ~0.25 s, stalling the server's requests."""
    path = directory / name
    # Each writing thread its own file (the MCP server refreshes beside a compaction's write);
    # the pid stays second to last: storage.file_ops removes the files of dead processes.
    tmp = path.with_name(f"{name}.{threading.get_ident()}.{os.getpid()}.tmp")
    header = {"format": FORMAT, "size": size, "digest": data_digest, "rules": rules}
    try:
        with tmp.open("wb") as f:
            placeholder = pickle.dumps({**header, "body_digest": "0" * 8}, protocol=5)
            f.write(placeholder)
            body = _Body(f)
            pickle.dump(state, body, protocol=5)
            final = pickle.dumps({**header, "body_digest": f"{body.crc:08x}"}, protocol=5)
            if len(final) != len(placeholder):  # a CRC-32 is 8 hex digits: never
                raise pickle.PicklingError("the snapshot's header changed length")
            f.seek(0)
            f.write(final)
        os.replace(tmp, path)  # a cache: no fsync; a torn file is ignored on read
    except (OSError, pickle.PicklingError) as exc:
        tmp.unlink(missing_ok=True)
        log.info("cortexgraph: could not write snapshot %s: %s", path, exc)
        return False
    return True


class _Body:
    """The file the pickler writes the body to, through this: each piece goes on to ``file``
    and into the CRC-32 of the body."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self.crc = 0

    def write(self, chunk: Any) -> int:
        self._file.write(chunk)
        self.crc = zlib.crc32(chunk, self.crc)
        return memoryview(chunk).nbytes


__all__ = [
    "FORMAT",
    "SNAPSHOT_NAME",
    "read_snapshot",
    "snapshot_size",
    "snapshot_state",
    "snapshot_view",
    "write_snapshot",
    "write_snapshot_of",
]
