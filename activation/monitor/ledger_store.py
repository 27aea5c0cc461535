"""Where the monitor's learning lives: a store of its own, apart from the user's memories.

    <storage>/monitor/ledger/memories.jsonl, relations.jsonl   (a JSONL store, no embeddings)

The ledger's records (``bm.*``) are bookkeeping about the assistant, not memories of the user,
so they never go into the user's store: search, retrieval, stats, the graph, consolidation and
the vault see none of them. Stores written before this split hold them as core memories;
``isolate_monitor_records`` moves them here when a shell opens the user's store (MCP server,
consolidation, the SessionStart hook). Moving copies first and deletes after, and the ledger's
own copy of a record wins, so an interrupted move is finished by the next open and loses
nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cortexgraph.storage import JSONLStore, MemoryStore, open_store
from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.models import Memory

if TYPE_CHECKING:
    from cortexgraph.activation.monitor.learning import BehaviorLedger

# The tag and source of every record the monitor writes (learning.py writes them). Here, so
# that a shell opening the user's store (isolate_monitor_records) loads no monitor logic.
TAG = "behavior-monitor"
LEDGER_DIR = Path("monitor") / "ledger"
ID_PREFIX = "bm."


def ledger_path(storage_path: str | os.PathLike[str]) -> Path:
    return Path(storage_path).expanduser() / LEDGER_DIR


def open_ledger_store(storage_path: str | os.PathLike[str]) -> JSONLStore:
    """The ledger's own JSONL store under ``<storage>/monitor/ledger`` (created if needed)."""
    return open_store(ledger_path(storage_path), StoreConfig())


def open_ledger(storage_path: str | os.PathLike[str]) -> BehaviorLedger:
    from cortexgraph.activation.monitor.learning import BehaviorLedger

    return BehaviorLedger(open_ledger_store(storage_path))


def is_monitor_memory(memory: Memory) -> bool:
    """A record the monitor wrote: its id prefix, its tag and its source all say so."""
    return memory.id.startswith(ID_PREFIX) and TAG in memory.tags and memory.meta.source == TAG


def is_monitor_record(record: dict[str, object]) -> bool:
    """The same test on a raw JSONL record (for readers that do not build ``Memory`` objects)."""
    rid, meta = record.get("id"), record.get("meta")
    if not isinstance(rid, str) or not rid.startswith(ID_PREFIX) or not isinstance(meta, dict):
        return False
    return meta.get("source") == TAG and TAG in (meta.get("tags") or ())


def monitor_memories(store: MemoryStore) -> list[Memory]:
    """The monitor's records in a user's store (through the tag index: cheap when there are none)."""
    return [m for m in store.list(tags=[TAG]) if is_monitor_memory(m)]


@dataclass(frozen=True, slots=True)
class IsolationReport:
    memories_moved: int
    relations_moved: int
    ledger: Path

    @property
    def moved(self) -> bool:
        return bool(self.memories_moved or self.relations_moved)


def move_monitor_records(user_store: MemoryStore, ledger_store: MemoryStore) -> IsolationReport:
    """Copy the monitor's records into ``ledger_store``, then delete them from ``user_store``.

    Only memories that pass ``is_monitor_memory`` move, with the relations between two of them;
    a relation between a monitor record and a user memory (none are written, but a user could
    make one) is dropped with the record, the user memory itself is untouched."""
    found = monitor_memories(user_store)
    ids = {m.id for m in found}
    # The store lists relations in save order, which the ledger keeps (ties of created_at
    # go by it, not by the random ids).
    relations = [
        r for r in user_store.relations() if r.from_memory_id in ids and r.to_memory_id in ids
    ]
    fresh = [m for m in found if ledger_store.find(m.id) is None]
    if fresh:
        ledger_store.put_many(fresh)
    known = {r.id for r in ledger_store.relations()}
    moved_relations = 0
    for rel in relations:
        if rel.id not in known:
            ledger_store.put_relation(rel)
            moved_relations += 1
    for m in found:  # only now: every record is in the ledger
        user_store.delete(m.id)
    where = Path(getattr(ledger_store, "path", "") or "")
    return IsolationReport(len(found), moved_relations, where)


def isolate_monitor_records(
    user_store: MemoryStore, storage_path: str | os.PathLike[str]
) -> IsolationReport:
    """Move monitor records out of the user's store at ``storage_path`` into the ledger beside
    it. Opens the ledger only when there is something to move."""
    if not monitor_memories(user_store):
        return IsolationReport(0, 0, ledger_path(storage_path))
    return move_monitor_records(user_store, open_ledger_store(storage_path))


def drop_monitor_records(store: MemoryStore) -> int:
    """Remove monitor records from a read-only, in-memory view (a dry run's snapshot)."""
    found = monitor_memories(store)
    for m in found:
        store.delete(m.id)
    return len(found)


__all__ = [
    "LEDGER_DIR",
    "IsolationReport",
    "drop_monitor_records",
    "is_monitor_memory",
    "is_monitor_record",
    "isolate_monitor_records",
    "ledger_path",
    "monitor_memories",
    "move_monitor_records",
    "open_ledger",
    "open_ledger_store",
]
