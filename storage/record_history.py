"""Every stored version of one memory, read back from the append-only JSONL.

``memories.jsonl`` keeps each update of a record as a new line (the last line wins), so the
lines holding an id are that memory's history until the file is compacted. Compaction keeps
only the latest version: what happened before it is then known from the record's own fields
(created, last used, promoted, merged into ...) and the beads log.
"""

from __future__ import annotations

import json
from pathlib import Path

from cortexgraph.storage.errors import StorageError
from cortexgraph.storage.models import Memory


def record_versions(
    directory: Path, memory_id: str, filename: str = "memories.jsonl"
) -> list[Memory]:
    """The versions of ``memory_id`` in file order (oldest first); a tombstone ends a run of
    versions and is returned as nothing (the caller sees the memory vanish)."""
    path = Path(directory) / filename
    needle = memory_id.encode("utf-8")
    versions: list[Memory] = []
    try:
        with path.open("rb") as fh:
            for raw in fh:
                if needle not in raw:
                    continue
                try:
                    obj = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(obj, dict) or obj.get("id") != memory_id:
                    continue
                if obj.get("_deleted") is True:
                    continue
                try:
                    versions.append(Memory.from_json(obj))
                except (ValueError, TypeError, KeyError):
                    continue
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc}") from exc
    return versions


__all__ = ["record_versions"]
