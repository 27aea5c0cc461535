"""The agents' collaborators built from settings (the edge's job; agents get Protocols):
the embedder, the vault's note sink, the beads issue tracker. Each is built on first use, and
its package is imported then (the vault code, GitPython, models), never at start-up.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from cortexgraph.mcp_server.state import ServerState
from cortexgraph.storage.errors import CortexGraphError

if TYPE_CHECKING:
    from cortexgraph.agents.protocols import IssueTracker
    from cortexgraph.vault_sync.note_sink import ObsidianNoteSink

log = logging.getLogger("cortexgraph.mcp")


def embedder_for(state: ServerState) -> tuple[Any, str]:
    """(the MiniLM embedder or None, a note saying which similarity is used)."""
    if not state.settings.enable_embeddings:
        return None, "embeddings disabled (CORTEXGRAPH_ENABLE_EMBEDDINGS=false): TF-IDF similarity"

    embedder = state.embedder
    if embedder is None:
        return None, "embedding model not installed: TF-IDF similarity"
    return embedder, f"embeddings by {embedder.name}"


def note_sink(state: ServerState) -> ObsidianNoteSink:
    """The vault writer (promotions, merges), one per server."""
    return state.note_sink


def issue_tracker(state: ServerState, *, create: bool) -> tuple[IssueTracker, str]:
    """The beads tracker, or an in-memory one (said out loud) when it cannot be used.

    ``create=False`` never initialises a git repository (dry runs and listing change nothing).
    """
    from cortexgraph.storage.beads.memory_tracker import InMemoryIssueTracker

    if not state.settings.beads_enabled:
        return InMemoryIssueTracker(), "issue tracking disabled: kept in memory"
    from cortexgraph.storage.beads import open_tracker
    from cortexgraph.user_store import tracker_location  # the rule the CLI and the flow use

    location, parents = tracker_location(state.settings)
    try:
        tracker = open_tracker(
            location, state.settings.beads_prefix, search_parents=parents, init=create
        )
    except CortexGraphError as exc:
        log.info("cortexgraph: beads tracker unavailable at %s: %s", location, exc)
        return (
            InMemoryIssueTracker(),
            f"no beads repository usable at {location} ({exc}); issues kept in memory for this run",
        )
    return tracker, f"issues tracked in {tracker.path}"


__all__ = ["embedder_for", "issue_tracker", "note_sink"]
