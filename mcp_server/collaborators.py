"""Building the agents' collaborators from settings (the edge's job; agents get Protocols)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from cortexgraph.mcp_server.app import ServerState
from cortexgraph.mcp_server.wiring import optional_module
from cortexgraph.storage.errors import CortexGraphError

log = logging.getLogger("cortexgraph.mcp")


def embedder_for(state: ServerState) -> tuple[Any, str]:
    """(the MiniLM embedder or None, a note saying which similarity is used)."""
    if not state.settings.enable_embeddings:
        return None, "embeddings disabled (CORTEXGRAPH_ENABLE_EMBEDDINGS=false): TF-IDF similarity"

    def build() -> Any:
        from cortexgraph.storage.embeddings import default_embedder

        return default_embedder()

    embedder = state.service("embedder", build)
    if embedder is None:
        return None, "embedding model not installed: TF-IDF similarity"
    return embedder, f"embeddings by {embedder.name}"


def note_sink(state: ServerState) -> Any:
    module = optional_module(
        "cortexgraph.vault_sync.note_sink", "writing to the vault", "ObsidianNoteSink"
    )
    s = state.settings
    return state.service(
        "note_sink", lambda: module.ObsidianNoteSink(s.vault_path, s.ltm_promoted_folder)
    )


def _tracker_location(state: ServerState) -> tuple[Path, bool]:
    s = state.settings
    return (s.beads_repo, True) if s.beads_repo is not None else (s.storage_path, False)


def issue_tracker(state: ServerState, *, create: bool) -> tuple[Any, str]:
    """The beads tracker, or an in-memory one (said out loud) when it cannot be used.

    ``create=False`` never initialises a git repository (dry runs and listing change nothing).
    """
    memory_tracker = optional_module(
        "cortexgraph.agents.memory_tracker", "issue tracking", "InMemoryIssueTracker"
    )
    if not state.settings.beads_enabled:
        return memory_tracker.InMemoryIssueTracker(), "issue tracking disabled: kept in memory"
    beads = optional_module("cortexgraph.storage.beads", "issue tracking", "open_tracker")
    location, parents = _tracker_location(state)
    try:
        tracker = beads.open_tracker(
            location, state.settings.beads_prefix, search_parents=parents, init=create
        )
    except CortexGraphError as exc:
        log.info("cortexgraph: beads tracker unavailable at %s: %s", location, exc)
        return (
            memory_tracker.InMemoryIssueTracker(),
            f"no beads repository usable at {location} ({exc}); issues kept in memory for this run",
        )
    return tracker, f"issues tracked in {tracker.path}"


__all__ = ["embedder_for", "issue_tracker", "note_sink"]
