"""Token-budgeted context, knowledge-graph queries, core memory and temporal truth.

Pure logic over ``storage`` (and ``vault_sync`` for long-term notes); the MCP server and the CLI
wire it to settings. Imports nothing heavy at import time: the tokenizer loads on first count.
"""

from __future__ import annotations

from cortexgraph.retrieval.context import (
    MEMORY_TYPES,
    RetrievalConfig,
    RetrievalFilters,
    RetrievalWeights,
    RetrievedContext,
    memory_retrieve,
)
from cortexgraph.retrieval.core import core_memories, core_notes, resolve_memory_id, set_core
from cortexgraph.retrieval.forget import ForgetOutcome, memory_forget
from cortexgraph.retrieval.graph import GraphQueryResult, Triple, graph_query
from cortexgraph.retrieval.temporal import (
    SUPERSEDED_BY,
    find_superseded,
    has_update_cue,
    history_of,
    record_update,
    restore,
    supersede,
)
from cortexgraph.retrieval.tokens import TokenCounter, default_counter

__all__ = [
    "MEMORY_TYPES",
    "SUPERSEDED_BY",
    "ForgetOutcome",
    "GraphQueryResult",
    "RetrievalConfig",
    "RetrievalFilters",
    "RetrievalWeights",
    "RetrievedContext",
    "TokenCounter",
    "Triple",
    "core_memories",
    "core_notes",
    "default_counter",
    "find_superseded",
    "graph_query",
    "has_update_cue",
    "history_of",
    "memory_forget",
    "memory_retrieve",
    "record_update",
    "resolve_memory_id",
    "restore",
    "set_core",
    "supersede",
]
