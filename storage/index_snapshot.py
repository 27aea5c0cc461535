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

The text index is kept apart, after the pickled body, with a check value of its own, and read
only on its first use (storage.deferred_text): a consolidation run never searches. Its slot
ids stay in the body beside the memories' ids (the same strings, pickled once), so an open
still checks that the index holds exactly the snapshot's memories.

Neither file is read whole into memory: the prefix's check value is taken a block at a time
and the body is unpickled straight from the file (``read_snapshot_of``), after its own check
value matched; a 10k store's open copied 19 MB for nothing, a 100k one's 150 MB.

The check values are CRC-32s (3.7 GB/s here against blake2b's 0.8): they are there to notice
an edited file or a torn write (an accidental match is one in four billion), not an attacker,
who could write a matching digest of any kind. What keeps a planted file harmless is the
unpickler: only classes of this package, numpy arrays and builtin containers are unpickled
(storage.deferred_text's ``SnapshotUnpickler``), so a planted file cannot run code.
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
from cortexgraph.storage.deferred_text import (
    DeferredText,
    SnapshotUnpickler,
    StoredBytes,
    crc_hex,
    digest,
)
from cortexgraph.storage.models import Memory
from cortexgraph.storage.text_index import TextIndex

log = logging.getLogger(__name__)

# Bump whenever the state or a pickled class (TextIndex, PostingsField, Segment ...) changes shape.
FORMAT = 5  # 5: the text index kept apart, read on first use; 4: memories as columns, CRC-32
SNAPSHOT_NAME = ".cortexgraph-index.pickle"
_HEADER_BYTES = 4096  # a header is ~200 bytes; anything longer is not one of ours
_BLOCK = 1 << 16  # check values are taken this much at a time (see crc_of)


def snapshot_state(
    memories: Sequence[Memory], text: TextIndex | tuple[list[str | None], bytes]
) -> tuple[dict[str, list[Any] | tuple[Any]], list[str | None], bytes]:
    """What a snapshot of a store holding ``memories`` and ``text`` keeps: the memories'
    columns, the text index's slot ids and the rest of it pickled (or an unchanged
    ``DeferredText``'s ``parts``: its bytes, not unpickled to be pickled again). The bytes
    are stored after the pickled body, read on first use (``write_snapshot_of``)."""
    if isinstance(text, TextIndex):
        slot_ids, rest = text.snapshot_parts()
        text = slot_ids, pickle.dumps(rest, protocol=5)
    return memory_columns(memories), *text


def snapshot_view(state: Any) -> tuple[dict[str, Memory], DeferredText] | None:
    """The memories by id and (deferred) text index of a ``snapshot_state``, or None if
    ``state`` is not one of this version's (its memories not exactly those the text index
    holds)."""
    if not (
        isinstance(state, tuple)
        and len(state) == 3
        and type(state[0]) is dict
        and type(state[1]) is list
        and type(state[2]) in (bytes, StoredBytes)
    ):
        return None
    columns, slot_ids, blob = state
    try:
        memories = dict(zip(columns["id"], memories_from_columns(columns), strict=True))
    except (TypeError, ValueError):
        return None
    # Written from one store, the slot ids are most often the memories' ids in their order
    # (the same strings: pickled once), then free slots: an identity compare each, not a set
    # of 100k ids (8 ms at 100k)
    n = len(memories)
    in_order = (
        n == len(columns["id"])
        and slot_ids[:n] == columns["id"]
        and slot_ids.count(None) == len(slot_ids) - n
    )
    if not in_order:
        held = [i for i in slot_ids if i is not None]
        if len(held) != len(memories) or memories.keys() != set(held):
            return None
    return memories, DeferredText(slot_ids, blob)


def crc_of(f: io.RawIOBase | io.BufferedIOBase, start: int, end: int) -> int | None:
    """CRC-32 of bytes ``start`` to ``end`` of ``f``, a block at a time into one buffer (no
    copy of the whole); None if the file ends first. (storage.snapshot_refresh takes the
    prefix a refreshed snapshot covers with it too.)"""
    buf = bytearray(min(_BLOCK, max(end - start, 0)))
    view = memoryview(buf)
    crc, at = 0, start
    f.seek(start)
    while at < end:
        n = f.readinto(view[: min(len(buf), end - at)])
        if not n:
            return None
        crc = zlib.crc32(view[:n], crc)
        at += n
    return crc


def read_snapshot_of(
    directory: Path,
    f: io.RawIOBase | io.BufferedIOBase,
    file_size: int,
    rules: str = "",
    name: str = SNAPSHOT_NAME,
) -> tuple[Any, int, int] | None:
    """(state, bytes of the file ``f`` it covers, their CRC-32) if the snapshot ``name``
    matches a prefix of ``f`` (``file_size`` bytes long), its body is intact (checksum) and it
    was built under the same record ``rules``. (``name``: the relations' one,
    storage.relation_snapshot, is kept the same way.)"""
    path = directory / name
    try:
        snap = path.open("rb", buffering=0)
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.info("cortexgraph: snapshot %s unreadable (%s); loading the JSONL", path, exc)
        return None
    try:
        with snap:
            head = io.BytesIO(snap.read(_HEADER_BYTES))
            header = SnapshotUnpickler(head).load()
            size = header["size"]
            if (
                header.get("format") != FORMAT
                or header.get("rules") != rules
                or not isinstance(size, int)
                or not 0 < size <= file_size
            ):
                return None
            crc = crc_of(f, 0, size)
            if crc is None or header.get("digest") != crc_hex(crc):
                return None
            tail = header.get("tail_size", 0)
            body_at, end = head.tell(), os.fstat(snap.fileno()).st_size
            if type(tail) is not int or not 0 <= tail <= end - body_at:
                return None
            body_crc = crc_of(snap, body_at, end - tail)
            if body_crc is None or header.get("body_digest") != crc_hex(body_crc):
                log.warning("cortexgraph: snapshot %s fails its checksum; loading the JSONL", path)
                return None
            snap.seek(body_at)  # the body, from where the header ended, a frame at a time
            state = SnapshotUnpickler(snap).load()
            if tail:  # (a tuple: write_snapshot_of took its last item apart)
                later = StoredBytes(snap.fileno(), end - tail, tail, header.get("tail_digest"))
                state = (*state, later)
            return state, size, crc
    except Exception as exc:  # any damage means: not usable, load the JSONL
        log.info("cortexgraph: ignoring snapshot %s (%s: %s)", path, type(exc).__name__, exc)
        return None


def read_snapshot(
    directory: Path, data: bytes, rules: str = "", name: str = SNAPSHOT_NAME
) -> tuple[Any, int] | None:
    """``read_snapshot_of`` for a file's bytes already in memory: (state, bytes covered),
    the bytes stored after the body read (a tuple's last item, as ``write_snapshot`` takes)."""
    found = read_snapshot_of(directory, io.BytesIO(data), len(data), rules, name)
    if found is None:
        return None
    state = found[0]
    if type(state) is tuple and state and type(state[-1]) is StoredBytes:
        later = state[-1].read()
        if later is None:
            return None
        state = (*state[:-1], later)
    return state, found[1]


def snapshot_size(directory: Path, rules: str = "", name: str = SNAPSHOT_NAME) -> int:
    """The bytes of its file the snapshot ``name`` was built from, as its header says: 0 when
    there is none, or it is unreadable, of another format or built under other ``rules``. Reads
    the header alone; whether the file still starts with those bytes is not checked (an open
    checks that, and rewrites a snapshot that does not match)."""
    try:
        with (directory / name).open("rb") as f:
            header = SnapshotUnpickler(io.BytesIO(f.read(_HEADER_BYTES))).load()
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

    A tuple ``state`` whose last item is bytes has them stored after the pickled body with a
    check value of their own: a reader gets a ``StoredBytes`` in their place, read when it
    needs them (the text index: storage.deferred_text).

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
    tail = b""
    if type(state) is tuple and state and type(state[-1]) is bytes:
        state, tail = state[:-1], state[-1]
    header = {
        "format": FORMAT,
        "size": size,
        "digest": data_digest,
        "tail_size": len(tail),
        "tail_digest": digest(tail),
        "rules": rules,
    }
    try:
        with tmp.open("wb") as f:
            placeholder = pickle.dumps({**header, "body_digest": "0" * 8}, protocol=5)
            f.write(placeholder)
            body = _Body(f)
            pickle.dump(state, body, protocol=5)
            f.write(tail)
            final = pickle.dumps({**header, "body_digest": crc_hex(body.crc)}, protocol=5)
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
    "DeferredText",
    "crc_of",
    "digest",
    "read_snapshot",
    "read_snapshot_of",
    "snapshot_size",
    "snapshot_state",
    "snapshot_view",
    "write_snapshot",
    "write_snapshot_of",
]
