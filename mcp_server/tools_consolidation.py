"""Consolidation tools: clusters, merges, the whole pipeline, and the agents' issue list."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from mcp_server.app import state_of
from mcp_server.errors import tool_errors
from mcp_server.wiring import optional_module


@tool_errors
def cluster_memories(
    ctx: Context,
    strategy: Annotated[Literal["similarity"], Field(description="Clustering strategy.")]
    = "similarity",
    threshold: Annotated[float | None, Field(description="Link similarity 0-1 (default from "
                                             "settings).", ge=0, le=1)] = None,
    max_cluster_size: Annotated[int | None, Field(description="Largest cluster (2-100).", ge=2,
                                                  le=100)] = None,
    find_duplicates: Annotated[bool, Field(description="List near-duplicate pairs instead.")]
    = False,
    duplicate_threshold: Annotated[float | None, Field(description="Duplicate similarity 0-1.",
                                                       ge=0, le=1)] = None,
) -> dict[str, Any]:  # fmt: skip
    """Group similar memories into clusters (or find near-duplicates) for consolidation."""
    optional_module("agents.cluster_detector", "cluster_memories")
    raise NotImplementedError


def register(server: MCPServer) -> None:
    server.add_tool(cluster_memories, annotations=ToolAnnotations(read_only_hint=True))
    _ = state_of


__all__ = ["cluster_memories", "register"]
