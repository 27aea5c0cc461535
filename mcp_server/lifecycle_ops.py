"""The work behind memory_status and memory_wipe (mcp_server/tools_lifecycle.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from cortexgraph.activation.entities import entity_kind
from cortexgraph.mcp_server.state import ServerState
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.storage.store_files import disk_bytes_by_kind, wipe
from cortexgraph.user_store import RUNS_FILE, last_run


def _last_run(directory: Path) -> dict[str, Any] | None:
    run = last_run(directory)
    if run is None:
        return None
    return {k: run.get(k) for k in ("finished_at", "agents", "total_seconds", "summaries")}


def status_report(state: ServerState) -> dict[str, Any]:
    s = state.settings
    store = state.store
    memories = store.list()
    by_status = Counter(m.status.value for m in memories)
    entities = Counter(e.lower() for m in memories for e in m.entities)
    kinds: Counter[str] = Counter()
    for entity in entities:
        kinds[entity_kind(entity)] += 1
    sizes = disk_bytes_by_kind(s.storage_path)
    dense = state.dense
    vault_index = s.vault_path / ".cortexgraph" / "ltm-index.jsonl"
    return {
        "storage_path": str(s.storage_path),
        "vault_path": str(s.vault_path),
        "tiers": {
            "stm_active": by_status.get("active", 0),
            "ltm_promoted": by_status.get("promoted", 0),
            "archived": by_status.get("archived", 0),
            "core": sum(m.is_core for m in memories),
            "summaries": sum("summary" in m.tags for m in memories),
        },
        "by_status": {st.value: by_status.get(st.value, 0) for st in MemoryStatus},
        "entities": len(entities),
        "by_entity_type": dict(kinds.most_common()),
        "relations": len(store.relations()),
        "disk_bytes": sum(sizes.values()),
        "disk_bytes_by_kind": sizes,
        "last_consolidation": _last_run(s.storage_path),
        "indexes": {
            "text_index": "in memory (BM25); snapshot on disk"
            if sizes.get("text_index")
            else "in memory (BM25); no snapshot on disk yet",
            "embeddings": (
                "off (CORTEXGRAPH_ENABLE_EMBEDDINGS=false)"
                if dense is None
                else "loaded"
                if dense.loaded
                else "not loaded yet (loads on the first semantic search)"
            ),
            "embedding_cache_bytes": sizes.get("embeddings", 0),
            "ltm_index": (
                f"{vault_index} ({vault_index.stat().st_size} bytes)"
                if vault_index.is_file()
                else "not built yet"
            ),
            "quarantined_lines": store.quarantined_lines,
        },
    }


def _same_path(given: str, path: Path) -> bool:
    text = given.strip()
    if not text:
        return False
    try:
        named = Path(text).expanduser()
        if not named.is_absolute():
            return False  # relative to the server's working folder, which the caller cannot see
        return text == str(path) or named.resolve() == path.resolve()
    except (OSError, RuntimeError, ValueError):
        return False


def wipe_store(state: ServerState, confirm: str, include_vault_notes: bool) -> dict[str, Any]:
    """Every memory and relation, the index files, the run history; optionally the vault notes
    cortexgraph wrote and nobody edited since. Beads issues (a git history) are left."""
    s = state.settings
    if not _same_path(confirm, s.storage_path):
        raise InvalidInputError(
            f"memory_wipe deletes every memory in {s.storage_path}; to confirm, pass that path "
            f"as confirm (got {confirm[:200]!r}). Nothing was deleted."
        )
    if state.dense is not None:
        # The background embedder saves each batch: none lands after the files are removed.
        state.dense.reset()
    wiped = wipe(state.store, s.storage_path, also_remove=(RUNS_FILE,))
    if state.dense is not None:
        state.dense.reset()  # forget the loaded vectors, so shutdown does not write them back
    state.clusters.clear()
    out: dict[str, Any] = {
        "storage_path": str(s.storage_path),
        "memories_deleted": wiped.memories_deleted,
        "relations_deleted": wiped.relations_deleted,
        "files_removed": wiped.files_removed,
        "kept": "beads issues (.beads/) and the behaviour monitor's logs",
    }
    if include_vault_notes:
        out.update(remove_unedited_notes(s.vault_path))
    return out


def remove_unedited_notes(vault: Path) -> dict[str, Any]:
    """Delete the notes cortexgraph wrote, memory notes (its write ledger) and entity notes,
    that nobody edited since; keep every note a person edited and every file of their own
    (vault_sync.written_notes)."""
    from cortexgraph.vault_sync.written_notes import remove_written_notes

    removed = remove_written_notes(vault)  # nothing when cortexgraph never wrote there
    return {
        "vault_notes_deleted": len(removed.deleted),
        "vault_notes_kept": removed.kept,
        "entity_notes_deleted": len(removed.entity_deleted),
        "entity_notes_kept": removed.entity_kept,
    }


__all__ = ["remove_unedited_notes", "status_report", "wipe_store"]
