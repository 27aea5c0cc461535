"""The JSONL short-term memory store: append-only files shared safely by several processes.

Layout of a storage directory (names as in cortexgraph 1.x):

    memories.jsonl               one memory per line; an update appends the whole record
    relations.jsonl              one relation per line
    {"id": ..., "_deleted": true}  a tombstone line deletes (1.x's format)
    *.quarantine.jsonl           lines that could not be read, moved aside with the reason
    .cortexgraph.lock            the inter-process lock held around appends and compaction

Every write happens under the lock after catching up with what other processes appended, so
several writers (MCP server, Prefect flow, CLI) never lose each other's records. Readers notice
another process's appends (size) or compaction (inode) with one ``stat`` and catch up.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from storage.base import CompactionReport, DenseScorer, IndexedStore
from storage.config import StoreConfig
from storage.errors import CortexGraphError, InvalidInputError, StorageError
from storage.models import Memory, Relation

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _FileCursor:
    path: Path
    inode: int = -1
    offset: int = 0


class JSONLStore(IndexedStore):
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
                f"storage path {self.path} is a file; CORTEXGRAPH_STORAGE_PATH must be a directory"
            )
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create storage directory {self.path}: {exc}") from exc
        self._mem_cursor = _FileCursor(self.path / self.config.memories_filename)
        self._rel_cursor = _FileCursor(self.path / self.config.relations_filename)
        self._flock = FileLock(str(self.path / ".cortexgraph.lock"))
        with self._lock, self._flock:
            self._reload_all()

    # -- reading -------------------------------------------------------------------------------
    def _stat(self, cursor: _FileCursor) -> tuple[int, int]:
        try:
            st = cursor.path.stat()
        except FileNotFoundError:
            return (-1, 0)
        return (st.st_ino, st.st_size)

    def _changed(self) -> bool:
        for c in (self._mem_cursor, self._rel_cursor):
            ino, size = self._stat(c)
            if ino != c.inode or size != c.offset:
                return True
        return False

    def _sync(self) -> None:
        if not self._changed():
            return
        with self._flock:
            for c in (self._mem_cursor, self._rel_cursor):
                ino, size = self._stat(c)
                if ino != c.inode or size < c.offset:
                    self._reload_all()
                    return
            self._read_tail(self._mem_cursor, self._apply_memory_line)
            self._read_tail(self._rel_cursor, self._apply_relation_line)

    def _reload_all(self) -> None:
        self._clear_indexes()
        for c in (self._mem_cursor, self._rel_cursor):
            c.inode, c.offset = -1, 0
        self._read_tail(self._mem_cursor, self._apply_memory_line)
        self._read_tail(self._rel_cursor, self._apply_relation_line)
        self.quarantined_lines = sum(
            _count_lines(self._quarantine_path(c)) for c in (self._mem_cursor, self._rel_cursor)
        )

    def _read_tail(self, cursor: _FileCursor, apply: Any) -> None:
        """Apply complete lines past the cursor; quarantine lines that cannot be read."""
        ino, size = self._stat(cursor)
        if ino == -1:
            cursor.inode, cursor.offset = -1, 0
            return
        with cursor.path.open("rb") as f:
            f.seek(cursor.offset)
            data = f.read(size - cursor.offset)
        # We hold the lock, so no writer is mid-line: an unterminated tail is torn for good.
        bad: list[tuple[int, bytes, str]] = []
        for n, raw in enumerate(data.split(b"\n")):
            if not raw.strip():
                continue
            try:
                apply(json.loads(raw))
            except (ValueError, CortexGraphError, TypeError, KeyError) as exc:
                bad.append((n, raw, f"{type(exc).__name__}: {exc}"))
        cursor.inode, cursor.offset = ino, size
        if bad:
            self._quarantine(cursor, bad)

    def _apply_memory_line(self, obj: Any) -> None:
        if isinstance(obj, dict) and obj.get("_deleted"):
            old = self._memories.get(obj["id"])
            if old is not None:
                self._unindex_memory(old)
            return
        self._index_memory(Memory.from_json(obj))

    def _apply_relation_line(self, obj: Any) -> None:
        if isinstance(obj, dict) and obj.get("_deleted"):
            self._unindex_relation(obj["id"])
            return
        self._index_relation(Relation.from_json(obj))

    def _quarantine_path(self, cursor: _FileCursor) -> Path:
        return cursor.path.with_suffix(".quarantine.jsonl")

    def _quarantine(self, cursor: _FileCursor, bad: list[tuple[int, bytes, str]]) -> None:
        """Move unreadable lines aside (with the reason) and rewrite the file without them."""
        qpath = self._quarantine_path(cursor)
        now = int(time.time())
        with qpath.open("a", encoding="utf-8") as q:
            for _, raw, reason in bad:
                q.write(json.dumps({"quarantined_at": now, "file": cursor.path.name,
                                    "reason": reason, "line": raw.decode("utf-8", "replace")})
                        + "\n")  # fmt: skip
        bad_lines = {raw for _, raw, _ in bad}
        kept = [
            line for line in cursor.path.read_bytes().split(b"\n")
            if line.strip() and line not in bad_lines
        ]  # fmt: skip
        self._atomic_write(cursor.path, [line + b"\n" for line in kept])
        cursor.inode, cursor.offset = self._stat(cursor)
        self.quarantined_lines += len(bad)
        log.warning(
            "cortexgraph: moved %d unreadable line(s) from %s to %s (first: %s)",
            len(bad), cursor.path, qpath, bad[0][2],
        )  # fmt: skip

    # -- writing -------------------------------------------------------------------------------
    def _append(self, cursor: _FileCursor, lines: Sequence[str]) -> None:
        if not lines:
            return
        payload = "".join(lines).encode("utf-8")
        try:
            with open(cursor.path, "ab") as f:
                if f.tell() > 0:
                    # A writer killed mid-line left no newline: start ours on a fresh line.
                    with open(cursor.path, "rb") as r:
                        r.seek(-1, os.SEEK_END)
                        if r.read(1) != b"\n":
                            payload = b"\n" + payload
                f.write(payload)
                f.flush()
                if self.config.fsync:
                    os.fsync(f.fileno())
        except OSError as exc:
            raise StorageError(f"cannot write {cursor.path}: {exc}") from exc
        ino, size = self._stat(cursor)
        cursor.inode, cursor.offset = ino, size

    def _write_locked(self, fn: Any) -> None:
        with self._flock:
            # Catch up first: what others appended must be in our indexes before our lines.
            if self._changed():
                for c in (self._mem_cursor, self._rel_cursor):
                    ino, size = self._stat(c)
                    if ino != c.inode or size < c.offset:
                        self._reload_all()
                        break
                else:
                    self._read_tail(self._mem_cursor, self._apply_memory_line)
                    self._read_tail(self._rel_cursor, self._apply_relation_line)
            fn()

    def _persist_memories(self, memories: Sequence[Memory]) -> None:
        lines = [json.dumps(m.to_json(), ensure_ascii=False) + "\n" for m in memories]
        self._write_locked(lambda: self._append(self._mem_cursor, lines))

    def _persist_relations(self, relations: Sequence[Relation]) -> None:
        lines = [json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in relations]
        self._write_locked(lambda: self._append(self._rel_cursor, lines))

    def _persist_deletions(self, memory_ids: Sequence[str], relation_ids: Sequence[str]) -> None:
        def write() -> None:
            self._append(self._rel_cursor, [_tombstone(r) for r in relation_ids])
            self._append(self._mem_cursor, [_tombstone(m) for m in memory_ids])

        self._write_locked(write)

    def _atomic_write(self, path: Path, chunks: Sequence[bytes]) -> None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with tmp.open("wb") as f:
                for chunk in chunks:
                    f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StorageError(f"cannot rewrite {path}: {exc}") from exc

    def compact(self) -> CompactionReport:
        """Rewrite both files with one line per live record (fsync + atomic replace)."""
        with self._lock, self._flock:
            self._reload_all()
            before_lines = sum(_count_lines(c.path) for c in (self._mem_cursor, self._rel_cursor))
            before_bytes = self._file_bytes()
            mem_lines = [
                (json.dumps(m.to_json(), ensure_ascii=False) + "\n").encode("utf-8")
                for m in sorted(self._memories.values(), key=lambda m: (m.created_at, m.id))
            ]
            rel_lines = [
                (json.dumps(r.to_json(), ensure_ascii=False) + "\n").encode("utf-8")
                for r in sorted(self._relations.values(), key=lambda r: (r.created_at, r.id))
            ]
            self._atomic_write(self._mem_cursor.path, mem_lines)
            self._atomic_write(self._rel_cursor.path, rel_lines)
            for c in (self._mem_cursor, self._rel_cursor):
                c.inode, c.offset = self._stat(c)
            return CompactionReport(
                memories_kept=len(mem_lines),
                relations_kept=len(rel_lines),
                lines_before=before_lines,
                lines_after=len(mem_lines) + len(rel_lines),
                bytes_before=before_bytes,
                bytes_after=self._file_bytes(),
            )

    def _file_bytes(self) -> int:
        return sum(self._stat(c)[1] for c in (self._mem_cursor, self._rel_cursor))

    def reload(self) -> None:
        with self._lock, self._flock:
            self._reload_all()


def _tombstone(record_id: str) -> str:
    return json.dumps({"id": record_id, "_deleted": True}) + "\n"


def _count_lines(path: Path) -> int:
    try:
        with path.open("rb") as f:
            return sum(1 for line in f if line.strip())
    except FileNotFoundError:
        return 0


__all__ = ["JSONLStore"]
