"""Consolidation tools a person or an assistant drives one cluster at a time: find clusters
(or near-duplicate pairs), then preview, merge or link one. The whole pipeline and its issue
list are tools_pipeline's.

The agents are called directly as plain Python (agents.cluster_detector, agents.semantic_merge);
no Prefect here.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field, StrictFloat, StrictInt

from cortexgraph.mcp_server.collaborators import cached_embedder_for, pipeline_config_for
from cortexgraph.mcp_server.errors import tool_errors
from cortexgraph.mcp_server.state import ServerContext, ServerState, state_of
from cortexgraph.storage.errors import InvalidInputError, NotFoundError
from cortexgraph.storage.models import validate_id

MAX_CLUSTERS_RETURNED = 50
MAX_REPORT_CHARS = 20_000


def _cluster_config(state: ServerState, threshold: float | None, max_size: int | None) -> Any:
    """The pipeline's cluster rule; an explicit ``threshold`` is the bar for either similarity
    (MiniLM or TF-IDF), as 1.x's was."""
    config = replace(pipeline_config_for(state).cluster, open_issues=False)
    if threshold is not None:
        config = replace(config, link_threshold=threshold, tfidf_link_threshold=threshold)
    if max_size is not None:
        config = replace(
            config,
            max_cluster_size=max_size,
            min_cluster_size=min(config.min_cluster_size, max_size),
        )
    return config


def _detect(state: ServerState, threshold: float | None, max_size: int | None) -> tuple[Any, str]:
    from cortexgraph.agents.cluster_detector import ClusterDetector

    embedder, note = cached_embedder_for(state)
    config = _cluster_config(state, threshold, max_size)
    report = ClusterDetector(state.store, embedder, None, config).run(now=time.time(), dry_run=True)
    known = state.clusters
    for c in report.clusters:
        known[c.cluster_id] = c
    return report, note


def _cluster_view(c: Any) -> dict[str, Any]:
    previews = list(c.previews)[:5]
    return {
        "id": c.cluster_id,
        "cluster_id": c.cluster_id,
        "size": c.size,
        "cohesion": round(c.cohesion, 4),
        "suggested_action": c.action.value,
        "memory_ids": list(c.memory_ids),
        "content_previews": previews,
        "previews": previews,
    }


def _duplicates(state: ServerState, threshold: float, max_size: int | None) -> dict[str, Any]:
    """1.x's duplicate pairs {id1, id2, similarity}, by the detector's search and guards."""
    from cortexgraph.agents.cluster_detector import ClusterDetector
    from cortexgraph.mcp_server.views import preview

    embedder, note = cached_embedder_for(state)
    config = _cluster_config(state, threshold, max_size)
    method, pairs = ClusterDetector(state.store, embedder, None, config).duplicate_pairs(threshold)
    store = state.store
    shown = pairs[: MAX_CLUSTERS_RETURNED * 4]
    return {
        "success": True,
        "mode": "duplicate_detection",
        "similarity": method,
        "note": note,
        "threshold": threshold,
        "duplicates_found": len(pairs),
        "duplicates": [
            {
                "id1": p.id1,
                "id2": p.id2,
                "similarity": round(p.similarity, 4),
                "content1_preview": preview(store.get(p.id1).content, 120),
                "content2_preview": preview(store.get(p.id2).content, 120),
            }
            for p in shown
        ],
        "truncated": len(pairs) > len(shown),
        "message": f"Found {len(pairs)} potential duplicate pairs",
    }


@tool_errors
def cluster_memories(
    ctx: ServerContext,
    strategy: Annotated[
        Literal["similarity"], Field(description="Clustering strategy.")
    ] = "similarity",
    threshold: Annotated[
        StrictFloat | None,
        Field(description="Link similarity 0-1 (default from settings).", ge=0, le=1),
    ] = None,
    max_cluster_size: Annotated[
        StrictInt | None, Field(description="Largest cluster (2-100).", ge=2, le=100)
    ] = None,
    find_duplicates: Annotated[
        bool, Field(description="List near-duplicate groups instead (a much higher threshold).")
    ] = False,
    duplicate_threshold: Annotated[
        StrictFloat | None, Field(description="Duplicate similarity 0-1 (default 0.9).", ge=0, le=1)
    ] = None,
) -> dict[str, Any]:
    """Group similar memories into clusters by the consolidation pipeline's rule (or list
    near-duplicate pairs); changes nothing. Pass a cluster_id to consolidate_memories to merge
    or link one."""
    state = state_of(ctx)
    if find_duplicates:
        dup = 0.9 if duplicate_threshold is None else duplicate_threshold
        return _duplicates(state, dup, max_cluster_size)
    report, note = _detect(state, threshold, max_cluster_size)
    clusters = sorted(report.clusters, key=lambda c: (-c.cohesion, c.cluster_id))
    return {
        "success": True,
        "mode": "clustering",
        "strategy": strategy,
        "similarity": report.method,
        "note": note,
        "scanned": report.scanned,
        "threshold": report.link_threshold,
        "link_threshold": report.link_threshold,
        "clusters_found": len(clusters),
        "count": len(clusters),
        "clusters": [_cluster_view(c) for c in clusters[:MAX_CLUSTERS_RETURNED]],
        "truncated": len(clusters) > MAX_CLUSTERS_RETURNED,
        "message": f"Found {len(clusters)} clusters using {strategy} strategy",
    }


@tool_errors
def consolidate_memories(
    ctx: ServerContext,
    cluster_id: Annotated[
        str | None, Field(description="A cluster_id from cluster_memories.", max_length=200)
    ] = None,
    mode: Annotated[
        Literal["preview", "apply", "link"],
        Field(
            description="preview: show the merged memory; apply: merge (sources archived, "
            "reversible); link: relate the members without merging."
        ),
    ] = "preview",
    auto_detect: Annotated[
        bool, Field(description="Act on every cluster at or above cohesion_threshold instead.")
    ] = False,
    cohesion_threshold: Annotated[
        StrictFloat, Field(description="Minimum cohesion for auto_detect (0-1).", ge=0, le=1)
    ] = 0.75,
) -> dict[str, Any]:
    """Merge (or link) a cluster of similar memories into one, keeping every distinct fact."""
    from cortexgraph.agents.cluster_detector import ClusterAction
    from cortexgraph.agents.semantic_merge import MergeConfig, MergeMode, SemanticMerge

    state = state_of(ctx)
    if cluster_id is None and not auto_detect:
        raise InvalidInputError("pass a cluster_id from cluster_memories, or auto_detect=true")
    if auto_detect:
        report, _ = _detect(state, None, None)
        chosen = [c for c in report.clusters if c.cohesion >= cohesion_threshold]
    else:
        validate_id(cluster_id, "cluster id")
        known: dict[str, Any] = state.clusters
        if cluster_id not in known:
            _detect(state, None, None)
        if cluster_id not in known:
            raise NotFoundError(
                f"no cluster {cluster_id!r}; run cluster_memories and use one "
                "of the cluster_id values it returns"
            )
        chosen = [known[cluster_id]]
    # Chosen by the caller (or by the cohesion threshold): merge whatever the detector suggested.
    chosen = [replace(c, action=ClusterAction.MERGE) for c in chosen]
    merge = SemanticMerge(
        state.store, None, MergeConfig(mode=MergeMode("apply" if mode == "preview" else mode))
    )
    out = merge.run(now=time.time(), dry_run=mode == "preview", clusters=chosen)
    return {
        "success": True,
        "mode": mode,
        "clusters": len(chosen),
        "results": [
            {
                "cluster_id": o.cluster_id,
                "status": o.status,
                "reason": o.reason,
                "source_ids": list(o.source_ids),
                "merged_id": o.merged_id,
                "content": o.content[:2000],
                "strength": round(o.strength, 4),
                "sentences_kept": o.sentences_kept,
                "relations_repointed": o.relations_repointed,
                "relation_ids": list(o.relation_ids),
            }
            for o in out.outcomes
        ][:MAX_CLUSTERS_RETURNED],
        **_one_x_fields(mode, out.outcomes),
        **(
            _one_x_previews(state.store, chosen, out.outcomes, auto_detect)
            if mode == "preview"
            else {}
        ),
    }


def _one_x_previews(store: Any, clusters: Any, outcomes: Any, auto_detect: bool) -> dict[str, Any]:
    """1.x's preview: ``auto_detect``, ``candidates_found`` and ``previews[]{cluster_id,
    cohesion, memory_count, merged_content_preview, merged_entities, merged_tags,
    calculated_strength}`` (tags and entities: the union the merge would write)."""
    from cortexgraph.agents.merge_ops import merged_labels

    cohesion = {c.cluster_id: c.cohesion for c in clusters}
    previews = []
    for o in outcomes:
        if o.status != "previewed":
            continue
        sources = [m for m in (store.find(i) for i in o.source_ids) if m is not None]
        tags, entities = merged_labels(sources, store.config)  # as the merge makes them
        previews.append(
            {
                "cluster_id": o.cluster_id,
                "cohesion": round(cohesion.get(o.cluster_id, 0.0), 4),
                "memory_count": len(o.source_ids),
                "merged_content_preview": o.content[:300],
                "merged_entities": list(entities),
                "merged_tags": list(tags),
                "calculated_strength": round(o.strength, 4),
            }
        )
    return {
        "auto_detect": auto_detect,
        "candidates_found": len(clusters),
        "previews": previews[:MAX_CLUSTERS_RETURNED],
    }


def _one_x_fields(mode: str, outcomes: Any) -> dict[str, Any]:
    """1.x's top-level result of an apply (``new_memory_id``, ``source_ids``, ``relation_ids``:
    the consolidated_from relations, ``archived_count``, ``message``) or a link
    (``relations_created``, ``cluster_id``, ``message``), over every cluster of the call."""
    done = [o for o in outcomes if o.status == ("merged" if mode == "apply" else "linked")]
    relation_ids = [r for o in done for r in o.relation_ids]
    if mode == "apply":
        sources = [s for o in done for s in o.source_ids]
        merged = [o.merged_id for o in done]
        return {
            "new_memory_id": merged[0] if merged else None,
            "source_ids": sources,
            "relation_ids": relation_ids,
            "archived_count": len(sources),
            "message": f"Merged {len(sources)} memories into {', '.join(merged)}"
            if merged
            else "Nothing merged",
        }
    if mode == "link":
        return {
            "relations_created": len(relation_ids),
            "cluster_id": outcomes[0].cluster_id if outcomes else None,
            "relation_ids": relation_ids,
            "message": f"Created {len(relation_ids)} relations linking "
            f"{sum(len(o.source_ids) for o in done)} memories",
        }
    return {}


def register(server: MCPServer[ServerState], state: ServerState) -> None:
    """Add this module's tools (their handlers reach the state through their ctx)."""
    server.add_tool(cluster_memories, annotations=ToolAnnotations(read_only_hint=True))
    server.add_tool(consolidate_memories, annotations=ToolAnnotations(destructive_hint=False))


__all__ = ["cluster_memories", "consolidate_memories", "register"]
