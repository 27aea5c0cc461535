"""The store's JSONL lines: parsing them, last-line-wins records, bad lines, lines written back.

Pure functions over bytes; ``storage.jsonl_store`` owns the files, the lock and the cursors.
"""

from __future__ import annotations

import contextlib
import gc
import json
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.json_text import dumps_compact, orjson  # orjson may be None

if TYPE_CHECKING:
    from cortexgraph.storage.models import Memory, Relation

# A line that cannot be read may raise anything: json (ValueError, RecursionError on deep
# nesting), not an object / no id (TypeError, KeyError, AttributeError), a bad field
# (InvalidInputError). Whatever it is, that one line is quarantined; the store still opens.
BAD_LINE_ERRORS = (Exception,)
# A quarantine reason is a hint for a person, not a copy of the line.
REASON_CHARS = 300

LineCheck = Callable[[bytes, Any], None]
# (the whole file, its lines) -> True if every line surely passes the LineCheck
LinesCheck = Callable[[bytes, list[bytes]], bool]
# parsed objects -> their records, or None: build them one at a time
BlockBuild = Callable[[list[Any]], list[Any] | None]
# Records built at once by a BlockBuild; a block with one unusual record is built one by one.
BLOCK = 4096
_ID = operator.itemgetter("id")


@dataclass(frozen=True, slots=True)
class BadLine:
    raw: bytes
    reason: str


@dataclass(frozen=True, slots=True)
class UnreadableLines:
    """The bad lines of one store file, found by a read that moves nothing (a dry run's
    ``InMemoryStore.from_files``): where they are and where a live open would move them."""

    path: Path
    count: int
    first_reason: str

    @property
    def quarantine(self) -> Path:
        return quarantine_path(self.path)

    def describe(self) -> str:
        return (
            f"{self.count} unreadable line(s) in {self.path}, left in place by this read; the "
            f"next live run moves them to {self.quarantine} (first: {self.first_reason})"
        )


def live_records(
    data: bytes,
    build: Callable[[Any], Any],
    check: LineCheck | None = None,
    *,
    lines_pass: LinesCheck | None = None,
    build_block: BlockBuild | None = None,
) -> tuple[list[Any], list[BadLine]]:
    """Live records of one file (last line wins, tombstones delete) and its unreadable lines.

    ``check(raw, obj)`` applies the rules on whole lines (size, valid Unicode). Opening a big
    store takes a quicker way through the same rules when it can: ``lines_pass(data, lines)``
    says that every line passes ``check`` without looking at each, and ``build_block(objs)``
    builds a block of records at once, or returns None (then each is built by ``build``)."""
    parsed = _parsed_in_bulk(data, lines_pass) if lines_pass is not None else None
    bad: list[BadLine] = []
    latest = _latest_objects(data, check, bad) if parsed is None else parsed
    records: dict[str, Any] = {}
    failed: set[str] = set()
    for start in range(0, len(latest), BLOCK):
        block = latest[start : start + BLOCK]
        built = build_block(block) if build_block is not None else None
        if built is not None:
            records.update(zip(map(_ID, block), built, strict=True))
            continue
        for obj in block:
            try:
                records[obj["id"]] = build(obj)
            except BAD_LINE_ERRORS:
                failed.add(obj["id"])
    if failed:  # the newest line of these is bad: fall back to their last good one
        state, unbuildable = _replay(data, failed, build, check)
        records.update(state)
        bad.extend(unbuildable)  # every such line, not only the newest: all are quarantined
    return list(records.values()), bad


def _latest_objects(data: bytes, check: LineCheck | None, bad: list[BadLine]) -> list[Any]:
    """The newest line's object per live id, in the order the ids were first saved (since
    their last tombstone: the store's save order, which ties of ``created_at`` go by); bad
    lines into ``bad``."""
    latest: dict[str, dict[str, Any]] = {}
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = parse_record(raw, check)
            rid = obj["id"]
        except BAD_LINE_ERRORS as exc:
            bad.append(BadLine(raw, reason(exc)))
            continue
        if obj.get("_deleted") is True:
            latest.pop(rid, None)
        else:
            latest[rid] = obj  # an update keeps the place of the first save
    return list(latest.values())


def _parsed_in_bulk(data: bytes, lines_pass: LinesCheck) -> list[Any] | None:
    """What ``_latest_objects`` returns, each step one C loop over all lines, or None if
    any line is unusual (blank but not empty, not an object with a string id, refused by
    orjson): the line-by-line way then reads the file and says what is wrong."""
    if orjson is None:  # pragma: no cover
        return None
    lines = data.split(b"\n")
    if not all(lines):
        lines = [raw for raw in lines if raw]
    if not lines or not lines_pass(data, lines):
        return None
    try:
        objs = list(map(orjson.loads, lines))
    except orjson.JSONDecodeError:
        return None
    if set(map(type, objs)) != {dict}:
        return None
    ids = list(map(dict.get, objs, repeat("id")))
    if set(map(type, ids)) != {str}:
        return None
    if any(map(dict.__contains__, objs, repeat("_deleted"))):
        # A tombstone: an id saved again after it takes the place of that later save.
        latest: dict[str, dict[str, Any]] = {}
        for obj in objs:
            if obj.get("_deleted") is True:
                latest.pop(obj["id"], None)
            else:
                latest[obj["id"]] = obj
        return list(latest.values())
    last_line = dict(zip(ids, range(len(ids)), strict=True))
    if len(last_line) < len(ids):  # updated records: each newest line, at its first save's place
        objs = [objs[last_line[i]] for i in dict.fromkeys(ids)]
    return objs


def _replay(
    data: bytes, ids: set[str], build: Callable[[Any], Any], check: LineCheck | None
) -> tuple[dict[str, Any], list[BadLine]]:
    """State of ``ids`` from applying their lines in order, and their lines that cannot be
    built (lines that do not even parse were reported by the caller's first pass)."""
    state: dict[str, Any] = {}
    bad: list[BadLine] = []
    for raw in data.split(b"\n"):
        try:
            obj = parse_record(raw, check)
            rid = obj["id"]
        except BAD_LINE_ERRORS:
            continue
        if rid not in ids:
            continue
        if obj.get("_deleted") is True:
            state.pop(rid, None)
            continue
        try:
            state[rid] = build(obj)
        except BAD_LINE_ERRORS as exc:
            bad.append(BadLine(raw, reason(exc)))
    return state, bad


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Loading allocates millions of objects and creates no cycles: the collector's passes
    over them would cost about a third of the load.

    What was made meanwhile is kept (a store's view, a cache, a module) and is moved to the
    oldest generation as it leaves, without a pass: left in the youngest, the first allocation
    after ``gc.enable`` set off a pass over all of it, and a second one later moved it on
    (0.17 and 0.11 CPU s after a 100k store's open). ``freeze`` then ``unfreeze`` is that move
    (two list splices); inside a frozen stretch (agents.pipeline.gc_frozen) it stays frozen."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        frozen = gc.get_freeze_count()
        gc.freeze()
        if not frozen:
            gc.unfreeze()
        if enabled:
            gc.enable()


def parse_line(raw: bytes) -> Any:
    """One JSON line. orjson first; whatever it refuses (NaN, huge ints) gets json's verdict."""
    if orjson is not None:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    # Strict UTF-8: json.loads(bytes) would let encoded surrogates (b"\xed\xa0\x80") through.
    return json.loads(raw.decode("utf-8"))


def parse_record(raw: bytes, check: LineCheck | None = None) -> dict[str, Any]:
    """One line as a record object with a string id (or a tombstone); raises if it is not."""
    obj = parse_line(raw)
    if type(obj) is not dict:
        raise InvalidInputError(f"a record must be a JSON object, got {type(obj).__name__}")
    rid = obj.get("id")
    if not isinstance(rid, str):
        raise InvalidInputError("a record needs a string id")
    if check is not None:
        check(raw, obj)
    return obj


def reason(exc: BaseException) -> str:
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:  # an exception whose str() fails still gets a reason
        text = type(exc).__name__
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS] + "..."


def quarantine_path(path: Path) -> Path:
    return path.with_suffix(".quarantine.jsonl")


def tombstone(record_id: str) -> str:
    return json.dumps({"id": record_id, "_deleted": True})


def record_lines(records: Sequence[Memory | Relation]) -> list[bytes]:
    """One line per record, in the order given: the store's save order, so that a compacted
    file reopens to it (ties of whole-second ``created_at`` go by it; sorting by created_at
    and then the random id put one second's saves in a new order at every compaction)."""
    return [(dumps_compact(r.to_json()) + "\n").encode() for r in records]


def count_lines(path: Path) -> int:
    try:
        with path.open("rb") as f:
            return sum(1 for line in f if line.strip())
    except FileNotFoundError:
        return 0


__all__ = [
    "BAD_LINE_ERRORS",
    "BadLine",
    "UnreadableLines",
    "count_lines",
    "gc_paused",
    "live_records",
    "parse_line",
    "parse_record",
    "quarantine_path",
    "reason",
    "record_lines",
    "tombstone",
]
