"""What garbage collection deleted, kept so a person can bring it back.

``gc-removed.jsonl`` beside the store holds one line per deleted memory: the record, the
relations it held, when and why it was removed. Restoring appends a ``restored`` line; the
memory itself goes back into the store through the ordinary API. The file is append-only and
small (gc deletes only what sat archived through its grace period).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortexgraph.storage.errors import StorageError
from cortexgraph.storage.models import Memory, Relation

GRAVEYARD_NAME = "gc-removed.jsonl"


@dataclass(frozen=True, slots=True)
class GraveEntry:
    memory: Memory
    relations: tuple[Relation, ...]
    removed_at: int
    cause: str
    restored_at: int | None = None


class Graveyard:
    """The gc-removed records of the store in ``directory``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory).expanduser() / GRAVEYARD_NAME

    def bury(
        self, memory: Memory, relations: Sequence[Relation], *, now: float, cause: str
    ) -> None:
        self._append(
            {
                "memory": memory.to_json(),
                "relations": [r.to_json() for r in relations],
                "removed_at": int(now),
                "cause": cause,
            }
        )

    def mark_restored(self, memory_id: str, *, now: float) -> None:
        self._append({"restored": memory_id, "at": int(now)})

    def entries(self) -> dict[str, GraveEntry]:
        """The latest burial of each memory id, with when it was restored (if it was)."""
        out: dict[str, GraveEntry] = {}
        try:
            # Bytes, each line decoded alone: a line torn inside a multi-byte character is
            # one bad line, not a file no one can read.
            lines = self.path.read_bytes().splitlines()
        except FileNotFoundError:
            return out
        except OSError as exc:
            raise StorageError(f"cannot read {self.path}: {exc}") from exc
        for line in lines:
            try:
                obj = json.loads(line)
                if "restored" in obj:
                    old = out.get(obj["restored"])
                    if old is not None:
                        out[old.memory.id] = GraveEntry(
                            old.memory, old.relations, old.removed_at, old.cause, int(obj["at"])
                        )
                    continue
                memory = Memory.from_json(obj["memory"])
                rels = tuple(Relation.from_json(r) for r in obj.get("relations") or ())
                out[memory.id] = GraveEntry(
                    memory, rels, int(obj["removed_at"]), str(obj.get("cause") or "")
                )
            except (ValueError, TypeError, KeyError):
                continue  # a torn last line: the entries before it still count
        return out

    def find(self, memory_id: str) -> GraveEntry | None:
        return self.entries().get(memory_id)

    def _append(self, obj: dict[str, Any]) -> None:
        line = (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StorageError(f"cannot write {self.path}: {exc}") from exc


__all__ = ["GRAVEYARD_NAME", "GraveEntry", "Graveyard"]
