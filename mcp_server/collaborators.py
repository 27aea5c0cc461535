"""The agents' collaborators built from settings (the edge's job; agents get Protocols):
the pipeline's configuration, the embedder (the search's cache of vectors, or the bare model),
the vault's note sink, the beads issue tracker. Each is built on first use, and
its package is imported then (the vault code, GitPython, models), never at start-up.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from cortexgraph.mcp_server.errors import DependencyUnavailableError
from cortexgraph.mcp_server.state import ServerState
from cortexgraph.storage.errors import CortexGraphError

if TYPE_CHECKING:
    from cortexgraph.agents.pipeline import PipelineConfig
    from cortexgraph.agents.protocols import IssueTracker
    from cortexgraph.storage.embedding_cache import EmbeddingCache
    from cortexgraph.vault_sync.note_sink import ObsidianNoteSink

log = logging.getLogger("cortexgraph.mcp")


def embedder_for(state: ServerState) -> tuple[Any, str]:
    """(the MiniLM model or None, a note saying which similarity is used): for texts the
    server does not keep vectors of (vault notes, summary sentences, directives)."""
    cache, note = cached_embedder_for(state)
    return (None if cache is None else cache.embedder), note


def cached_embedder_for(state: ServerState) -> tuple[EmbeddingCache | None, str]:
    """(the search's embedding cache or None, a note): the consolidation agents embed through
    it, so a memory whose vector the server already holds is not embedded again, and what a
    run embeds stays for the next run and the next search (written back at shutdown)."""
    if not state.settings.enable_embeddings:
        return None, "embeddings disabled (CORTEXGRAPH_ENABLE_EMBEDDINGS=false): TF-IDF similarity"
    dense = state.dense
    try:
        cache = None if dense is None else dense.cache
    except DependencyUnavailableError:
        cache = None
    if cache is None:
        return None, "embedding model not installed: TF-IDF similarity"
    return cache, f"embeddings by {cache.name}"


def pipeline_config_for(state: ServerState) -> PipelineConfig:
    """The configuration the flow runs the agents with (agents.pipeline.pipeline_config)."""
    from cortexgraph.agents.pipeline import pipeline_config

    s = state.settings
    return pipeline_config(s.decay_config(), **s.pipeline_options())


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


__all__ = [
    "cached_embedder_for",
    "embedder_for",
    "issue_tracker",
    "note_sink",
    "pipeline_config_for",
]
