"""The JSONL short-term memory store: append-only files shared safely by several processes.

Layout of a storage directory (record names as in cortexgraph 1.x):

    memories.jsonl                 one memory per line; an update appends the whole record
    relations.jsonl                one relation per line
    {"id": ..., "_deleted": true}  a tombstone line deletes (1.x's format)
    *.quarantine.jsonl             lines that could not be read, moved aside with the reason
    .cortexgraph.lock              the inter-process lock held around every write and catch-up
    .cortexgraph.generation        bumped whenever a file is rewritten (compaction, quarantine)

Every write happens under the lock after catching up with what other processes appended, so
several writers (MCP server, Prefect flow, CLI) never lose each other's records. Readers notice
another process's appends with a ``stat`` (size) and a rewrite with the generation counter: an
inode number alone is not enough, because the filesystem reuses freed inodes at once.
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock

from cortexgraph.storage.bulk_records import plain_memories
from cortexgraph.storage.config import LOCK_NAME, StoreConfig
from cortexgraph.storage.deferred_text import DeferredText, crc_hex
from cortexgraph.storage.errors import CortexGraphError, InvalidInputError, StorageError
from cortexgraph.storage.file_cursor import (
    FileCursor,
    append_lines,
    file_stat,
    read_from,
    read_new_bytes,
    truncate_to,
)
from cortexgraph.storage.file_ops import (
    bump_generation,
    read_generation,
    remove_stale_temp_files,
)
from cortexgraph.storage.index_snapshot import (
    SNAPSHOT_NAME,
    read_snapshot_of,
    snapshot_state,
    snapshot_view,
    write_snapshot_of,
)
from cortexgraph.storage.jsonl_compaction import JSONLCompaction
from cortexgraph.storage.jsonl_lines import (
    BAD_LINE_ERRORS,
    BLOCK,
    BadLine,
    BlockBuild,
    count_lines,
    gc_paused,
    live_records,
    parse_record,
    quarantine_path,
    reason,
    tombstone,
)
from cortexgraph.storage.models import Memory, Relation
from cortexgraph.storage.protocol import DenseScorer
from cortexgraph.storage.quarantine import StoreQuarantine
from cortexgraph.storage.relation_snapshot import (
    RELATIONS_SNAPSHOT_NAME,
    relations_state,
    relations_view,
)
from cortexgraph.storage.snapshot_refresh import SnapshotRefresh
from cortexgraph.storage.validation import (
    check_loaded_line,
    lines_pass_rules,
    loaded_memory,
    loaded_relation,
)

log = logging.getLogger(__name__)


class JSONLStore(SnapshotRefresh, JSONLCompaction):
    """``IndexedStore`` persisted to append-only JSONL files in the directory ``path``
    (compacted by ``JSONLCompaction``, storage.jsonl_compaction; its snapshots refreshed on
    request by ``SnapshotRefresh``, storage.snapshot_refresh)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        config: StoreConfig | None = None,
        dense: DenseScorer | None = None,
    ) -> None:
        super().__init__(config, dense)
        self.path = Path(path).expanduser()
        if self.path.exists() and not self.path.is_dir():
            raise InvalidInputError(
                f"storage path {self.path} is a file, not a directory; point "
                "CORTEXGRAPH_STORAGE_PATH (or --storage-path) at a directory"
            )
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create storage directory {self.path}: {exc}") from exc
        self._mem = FileCursor(self.path / self.config.memories_filename)
        self._rel = FileCursor(self.path / self.config.relations_filename)
        self._gen_path = self.path / ".cortexgraph.generation"
        self._generation = -1
        self._flock = FileLock(str(self.path / LOCK_NAME))
        self._held = False  # inside _exclusive (the file lock taken, the view caught up)
        # One rule for what may be stored, on save (storage.validation) and here, on load.
        self._build_memory = functools.partial(loaded_memory, config=self.config)
        self._build_relation = functools.partial(loaded_relation, config=self.config)
        self._check_line = functools.partial(check_loaded_line, config=self.config)
        self._lines_pass = functools.partial(lines_pass_rules, config=self.config)
        self._build_memories = functools.partial(plain_memories, config=self.config)
        self._rules = repr(self.config.record_limits())
        # (bytes of memories.jsonl a fresh snapshot is to cover, their CRC-32), or None
        self._snapshot_due: tuple[int, int] | None = None
        self._relations_due: tuple[int, int] | None = None  # the same, for relations.jsonl
        self._view_from_snapshot = False
        self._unreadable = StoreQuarantine()
        try:
            with self._lock:
                with self._flock:
                    remove_stale_temp_files(self.path, (self._mem.path.name, self._rel.path.name))
                    self._reload_all()
                self._write_snapshot_if_due()
        except OSError as exc:
            if isinstance(exc, CortexGraphError):
                raise
            raise StorageError(f"cannot open store in {self.path}: {exc}") from exc

    # -- change detection ----------------------------------------------------------------------
    def _read_generation(self) -> int:
        return read_generation(self._gen_path)

    def _bump_generation(self) -> None:
        """Caller holds the lock."""
        self._generation = bump_generation(self._gen_path)

    def _changed(self) -> bool:
        if self._read_generation() != self._generation:
            return True
        return any(file_stat(c) != (c.inode, c.offset) for c in (self._mem, self._rel))

    def _catch_up(self) -> None:
        """Caller holds the lock: apply others' appends, or reload after a rewrite."""
        generation = self._read_generation()
        if generation != self._generation and not self._follow_compaction(generation):
            self._reload_all()
            self._snapshot_due = self._relations_due = None  # under the file lock: next open
            return
        stats = [(c, file_stat(c)) for c in (self._mem, self._rel)]
        if any(ino != c.inode or size < c.offset for c, (ino, size) in stats):
            self._reload_all()
            self._snapshot_due = self._relations_due = None
            return
        for (c, (_, size)), apply in zip(
            stats, (self._apply_memory, self._apply_relation), strict=True
        ):
            if size != c.offset:
                self._read_tail(c, apply)

    def _sync(self) -> None:
        # Held, nobody else can append: the view is current (our appends move the cursors).
        if not self._held and self._changed():
            with self._flock:
                self._catch_up()

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        # Callers hold self._lock, so one thread at a time reads _held. Nested (a write inside
        # writing(), put_relation's append) the file lock is ours and the view caught up: a
        # second filelock acquire would still cost ~0.3 ms (path resolution, fork tracking).
        if self._held:
            yield
            return
        with self._flock:
            self._catch_up()
            self._held = True
            try:
                yield
            finally:
                self._held = False

    # -- reading -------------------------------------------------------------------------------
    def _reload_all(self) -> None:
        """Read both files from the start; keep the last line per id, then index once."""
        with gc_paused():
            self._clear_indexes()
            self._unreadable.pending.clear()  # still in the files: read, and found, again
            self._generation = self._read_generation()
            for c in (self._mem, self._rel):
                c.inode, c.offset = -1, 0
            self._view_from_snapshot = False
            self._snapshot_due = self._load_file(
                self._mem, SNAPSHOT_NAME, self._install_snapshot, self._apply_memory
            )
            self._relations_due = self._load_file(
                self._rel, RELATIONS_SNAPSHOT_NAME, self._install_relations, self._apply_relation
            )
        self.quarantined_lines = sum(
            count_lines(quarantine_path(c.path)) for c in (self._mem, self._rel)
        )

    def _live_records(
        self, data: bytes, build: Callable[[Any], Any], block: BlockBuild | None = None
    ) -> tuple[list[Any], list[BadLine]]:
        """``live_records`` under this store's rules, the bulk way where it can."""
        return live_records(
            data, build, self._check_line, lines_pass=self._lines_pass, build_block=block
        )

    def _parse(self, cursor: FileCursor, data: bytes) -> tuple[list[Any], list[BadLine]]:
        """The live records of the memories' or the relations' file, and its bad lines."""
        if cursor is self._mem:
            return self._live_records(data, self._build_memory, self._build_memories)
        return self._live_records(data, self._build_relation)

    def _load_file(
        self,
        cursor: FileCursor,
        snapshot_name: str,
        install: Callable[[Any], bool],
        apply: Callable[[Any], None],
    ) -> tuple[int, int] | None:
        """From the file's snapshot plus the lines appended since, or else from the JSONL
        alone. Returns what a fresh snapshot is to cover (bytes of the file, their CRC-32),
        or None: not due. From a snapshot only the lines past it are read into memory."""
        big, cached = False, None  # (state, bytes it covers, their CRC-32) once installed

        def start_at(f: io.RawIOBase, size: int) -> int:  # read from the snapshot's end
            nonlocal big, cached
            big = size >= self.config.snapshot_min_bytes
            found = (
                read_snapshot_of(self.path, f, size, self._rules, snapshot_name) if big else None
            )
            cached = found if found is not None and install(found[0]) else None
            return 0 if cached is None else cached[1]

        ino, start, data = read_from(cursor.path, start_at)
        cursor.inode, cursor.offset = ino, start + len(data)
        if cached is not None:
            self._view_from_snapshot = True  # compaction parses the files instead
            # True when lines of the tail were quarantined: the file is then not what was read
            rewritten = self._apply_lines(cursor, data, apply)
            stale = len(data) > self.config.snapshot_refresh_bytes  # refresh it
            return (cursor.offset, zlib.crc32(data, cached[2])) if stale and not rewritten else None
        records, bad = self._parse(cursor, data)
        if bad and self._quarantine(cursor, bad):
            data = cursor.path.read_bytes()  # without them: it loads to this view
        if cursor is self._mem:
            self._load(records, ())
        else:
            self._load((), records)
        # lines not moved aside: no snapshot of the bytes that hold them (a reopen retries)
        rewritten = len(data) != cursor.offset or bool(self._unreadable.pending)
        # Written by __init__/reload once the file lock is released (a second at 100k).
        return (len(data), zlib.crc32(data)) if big and not rewritten else None

    def _install_relations(self, state: Any) -> bool:
        relations = relations_view(state)
        if relations is None:
            return False
        self._load((), relations)
        return True

    def _install_snapshot(self, state: Any) -> bool:
        """Caller has cleared the indexes. False: the state is not this version's."""
        view = snapshot_view(state)
        if view is None:
            return False
        self._memories, self._text = view
        # status now (quicker than unpickling it), tags and entities on first use
        self._index_deferring_labels(self._memories)
        return True

    def _write_snapshot_if_due(self) -> None:
        """Caller holds ``self._lock``: the in-memory view is still what ``data`` gives."""
        due, self._snapshot_due = self._snapshot_due, None
        relations, self._relations_due = self._relations_due, None
        with gc_paused():
            if due is not None:
                size, crc = due
                parts = self._text.parts() if type(self._text) is DeferredText else None
                view = snapshot_state(list(self._memories.values()), parts or self.text_index)
                write_snapshot_of(self.path, size, crc_hex(crc), view, self._rules)
            if relations is not None:
                size, crc = relations
                rows = relations_state(self._relations.values())
                write_snapshot_of(
                    self.path, size, crc_hex(crc), rows, self._rules, RELATIONS_SNAPSHOT_NAME
                )

    def _read_tail(self, cursor: FileCursor, apply: Callable[[Any], None]) -> None:
        """Apply complete lines past the cursor; quarantine lines that cannot be read."""
        ino, end, data = read_new_bytes(cursor)
        cursor.inode, cursor.offset = ino, end
        self._apply_lines(cursor, data, apply)

    def _apply_lines(self, cursor: FileCursor, data: bytes, apply: Callable[[Any], None]) -> bool:
        """Apply lines in order; quarantine those that cannot be read (True if any)."""
        # We hold the lock, so no writer is mid-line: an unterminated tail is torn for good.
        lines: list[tuple[bytes, Any]] = []
        for raw in data.split(b"\n"):
            if not raw.strip():
                continue
            try:
                lines.append((raw, parse_record(raw, self._check_line)))
            except BAD_LINE_ERRORS as exc:
                lines.append((raw, BadLine(raw, reason(exc))))
        built = self._memories_in_bulk([obj for _, obj in lines]) if cursor is self._mem else {}
        bad: list[BadLine] = []
        for raw, obj in lines:
            if type(obj) is BadLine:
                bad.append(obj)
                continue
            try:
                memory = built.get(id(obj))
                if memory is None:
                    apply(obj)
                else:
                    self._index_memory(memory)
            except BAD_LINE_ERRORS as exc:
                bad.append(BadLine(raw, reason(exc)))
        if bad and self._quarantine(cursor, bad):
            self.quarantined_lines += len(bad)
        return bool(bad)

    def _memories_in_bulk(self, objs: list[Any]) -> dict[int, Memory]:
        """The memories of the records among ``objs`` (not tombstones) that ``plain_memories``
        builds, by ``id`` of their object: the lines appended after a snapshot, or by another
        process, build as a cold open's do (a block it refuses is built line by line)."""
        records = [o for o in objs if type(o) is dict and o.get("_deleted") is not True]
        built: dict[int, Memory] = {}
        for start in range(0, len(records), BLOCK):
            block = records[start : start + BLOCK]
            memories = self._build_memories(block)
            if memories is not None:
                built.update(zip(map(id, block), memories, strict=True))
        return built

    def _apply_memory(self, obj: Any) -> None:
        if obj.get("_deleted") is True:
            old = self._memories.get(obj["id"])
            if old is not None:
                self._unindex_memory(old)
            return
        self._index_memory(self._build_memory(obj))

    def _apply_relation(self, obj: Any) -> None:
        if obj.get("_deleted") is True:
            self._unindex_relation(obj["id"])
            return
        self._index_relation(self._build_relation(obj))

    def _quarantine(self, cursor: FileCursor, bad: list[BadLine]) -> bool:
        """Caller holds the lock: ``bad`` moved aside (False: a full disk kept them in place,
        left out of the view, see ``StoreQuarantine``)."""
        moved = self._unreadable.move(cursor, bad)
        if moved:
            self._bump_generation()
        return moved

    # -- writing -------------------------------------------------------------------------------
    def _append(self, cursor: FileCursor, lines: Sequence[str]) -> None:
        append_lines(cursor, lines, fsync=self.config.fsync)

    def _persist_memories(self, memories: Sequence[Memory], lines: Sequence[str]) -> None:
        with self._exclusive():
            self._append(self._mem, lines)

    def _persist_relations(self, relations: Sequence[Relation], lines: Sequence[str]) -> None:
        with self._exclusive():
            self._append(self._rel, lines)

    def _persist_deletions(self, memory_ids: Sequence[str], relation_ids: Sequence[str]) -> None:
        with self._exclusive():
            rel_end = self._rel.offset  # caught up: the file's end
            self._append(self._rel, [tombstone(r) for r in relation_ids])
            try:
                self._append(self._mem, [tombstone(m) for m in memory_ids])
            except StorageError:  # a memory kept with its links gone is worse than neither
                if relation_ids:
                    truncate_to(self._rel, rel_end)
                raise

    def _file_bytes(self) -> int:
        return sum(file_stat(c)[1] for c in (self._mem, self._rel))


__all__ = ["JSONLStore"]
