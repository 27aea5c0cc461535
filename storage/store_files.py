"""The files of a store's directory: what kind each is, how many bytes each kind holds, and
emptying the store (every record, then the files derived from them).

The rules live here, below the shells: ``memory_status`` reports ``disk_bytes_by_kind`` and
``memory_wipe`` calls ``wipe`` (mcp_server/lifecycle_ops.py only translates). Git and beads
history (``.git/``, ``.beads/``) are never counted nor removed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cortexgraph.storage.index_snapshot import SNAPSHOT_NAME
from cortexgraph.storage.protocol import MemoryStore
from cortexgraph.storage.relation_snapshot import RELATIONS_SNAPSHOT_NAME

EMBEDDINGS_GLOB = ".embeddings-*"  # the cache files and their side files (embedding_cache)
QUARANTINE_GLOB = "*.quarantine.jsonl"
# Files rebuilt from the records (or holding lines that could not be read): a wipe removes them.
DERIVED_FILES = (SNAPSHOT_NAME, RELATIONS_SNAPSHOT_NAME, EMBEDDINGS_GLOB, QUARANTINE_GLOB)
_HISTORY = (".git", ".beads")


def file_kind(name: str) -> str:
    """``memories``, ``relations``, ``quarantine``, ``text_index``, ``embeddings`` or ``other``."""
    if "quarantine" in name:
        return "quarantine"
    if name.endswith("memories.jsonl"):
        return "memories"
    if name.endswith("relations.jsonl"):
        return "relations"
    if name in (SNAPSHOT_NAME, RELATIONS_SNAPSHOT_NAME):  # the load snapshots, BM25's with them
        return "text_index"
    if name.startswith(".embeddings-"):
        return "embeddings"
    return "other"


def disk_bytes_by_kind(directory: Path) -> dict[str, int]:
    """Bytes per kind of file (``file_kind``) under ``directory``, git and beads history apart;
    empty when the directory does not exist."""
    sizes: Counter[str] = Counter()
    if not directory.is_dir():
        return {}
    for path in directory.rglob("*"):
        if not path.is_file() or path.relative_to(directory).parts[0] in _HISTORY:
            continue
        sizes[file_kind(path.name)] += path.stat().st_size
    return dict(sizes)


@dataclass(frozen=True, slots=True)
class WipeReport:
    memories_deleted: int
    relations_deleted: int
    files_removed: list[str]


def wipe(store: MemoryStore, directory: Path, also_remove: Sequence[str] = ()) -> WipeReport:
    """Delete every memory and relation of ``store``, compact its files, then remove the derived
    files (``DERIVED_FILES``) and the files matching ``also_remove`` in ``directory``."""
    # One hold of the store for the deletes (a JSONL store's file lock once, not once a record)
    # and no other writer between them and the compaction.
    with store.writing():
        memories, relations = store.list(), store.relations()
        for m in memories:
            store.delete(m.id)
        for r in store.relations():  # relations whose memories were already gone
            store.delete_relation(r.id)
        store.compact()
    removed = []
    for pattern in (*DERIVED_FILES, *also_remove):
        for path in sorted(directory.glob(pattern)):
            path.unlink(missing_ok=True)
            removed.append(path.name)
    return WipeReport(len(memories), len(relations), removed)


__all__ = [
    "DERIVED_FILES",
    "EMBEDDINGS_GLOB",
    "QUARANTINE_GLOB",
    "WipeReport",
    "disk_bytes_by_kind",
    "file_kind",
    "wipe",
]
