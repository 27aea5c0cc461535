"""What each API route answers, as plain data. Search, graph and decay come from the layers
below (vault_sync, storage.decay); reviews go through agents.review."""

from __future__ import annotations

import time
from typing import Any

from cortexgraph.storage.decay import DAY, memory_score
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.user_store import recent_runs

CURVE_POINTS = 61
# A hit whose text relevance (0-1: BM25 over the best hit's, fused with the cosine where there
# are vectors) is below this is labelled weak; decay and links alone never make a hit strong.
RELEVANCE_FLOOR = 0.25


def relevance(hit: dict[str, Any]) -> float:
    """The hit's text relevance, apart from decay: its memory's similarity or its note's."""
    return max(float(hit.get("similarity") or 0.0), float(hit.get("ltm_score") or 0.0))


def search(state: Any, query: str, limit: int) -> dict[str, Any]:
    from cortexgraph.vault_sync import search_unified

    if not query.strip():
        return {"query": query, "results": [], "strong": 0, "relevance_floor": RELEVANCE_FLOOR}
    hits = search_unified(
        state.store,
        state.ltm_index(),
        query,
        limit=limit,
        # the same weights as `cortexgraph vault search` and MCP search_unified (the configured
        # semantic weight included: the web view used to fall back to the function's 0.5)
        **state.settings.unified_search_weights(),
        verbose=True,
        embedder=state.embedder,
        now=time.time(),
    )
    results = []
    for h in hits:
        row = h.to_json(verbose=True)
        row["relevance"] = round(relevance(row), 4)
        row["weak"] = row["relevance"] < RELEVANCE_FLOOR
        results.append(row)
    return {
        "query": query,
        "results": results,
        "strong": sum(not r["weak"] for r in results),
        "relevance_floor": RELEVANCE_FLOOR,
    }


def graph(state: Any, max_nodes: int) -> dict[str, Any]:
    """The nodes and links `cortexgraph graph` draws, with the same layout."""
    from cortexgraph.vault_sync.vault_graph import build_graph, layout, trim_graph

    g = build_graph(state.ltm_index(), state.store.list(), state.store.relations())
    g = trim_graph(g, max_nodes=max(1, min(max_nodes, 2000)))
    pos = layout(g) if len(g) else {}
    nodes = [
        {
            "id": n,
            "label": str(d.get("label", n)),
            "kind": d.get("kind", "memory"),
            "x": round(float(pos[n][0]), 4),
            "y": round(float(pos[n][1]), 4),
            "degree": g.degree(n),
        }
        for n, d in g.nodes(data=True)
    ]
    edges = [
        {"source": a, "target": b, "kind": d.get("kind", "")} for a, b, d in g.edges(data=True)
    ]
    return {"nodes": nodes, "edges": edges}


def memory_with_curve(state: Any, memory_id: str, now: float, days: float) -> dict[str, Any]:
    """The memory and its decay score from its last use until ``days`` from now."""
    if not 0 < days <= 3650:
        raise InvalidInputError("days must be in (0, 3650]")
    memory = state.store.get(memory_id)
    cfg = state.store.config.decay
    start = min(float(memory.last_used or memory.created_at), now)
    end = now + days * DAY
    step = (end - start) / (CURVE_POINTS - 1)
    points = [
        {
            "t": start + i * step,
            "days": round((start + i * step - now) / DAY, 3),
            "score": round(memory_score(memory, start + i * step, cfg), 4),
        }
        for i in range(CURVE_POINTS)
    ]
    return {
        "memory": memory.shown_json(),
        "score_now": round(memory_score(memory, now, cfg), 4),
        "curve": points,
        "forget_threshold": cfg.forget_threshold,
        "danger_zone": [cfg.danger_zone_min, cfg.danger_zone_max],
        "promote_threshold": cfg.promote_threshold,
    }


def reviews(state: Any) -> dict[str, Any]:
    from cortexgraph.agents.review import pending_reviews

    tracker = state.tracker()
    if tracker is None:
        return {"tracker": None, "reviews": []}
    out = []
    for issue in pending_reviews(tracker):
        ids = list(issue.metadata.get("memory_ids") or ())
        found = [state.store.find(i) for i in ids]
        out.append(
            {
                "id": issue.id,
                "title": issue.title,
                "status": issue.status,
                "cohesion": issue.metadata.get("cohesion"),
                "memories": [
                    {"id": m.id, "content": m.content, "status": m.status.value}
                    for m in found
                    if m is not None
                ],
            }
        )
    return {"tracker": str(getattr(tracker, "path", "")), "reviews": out}


def decide(state: Any, issue_id: str, decision: str, now: float) -> dict[str, Any]:
    from cortexgraph.agents.review import approve_review, reject_review

    tracker = state.tracker()
    if tracker is None:
        raise InvalidInputError("no issue tracker for this store: nothing to review")
    if decision == "approve":
        done = approve_review(state.store, tracker, issue_id, now=now, by="the web view")
    else:
        done = reject_review(tracker, issue_id, by="the web view")
    return {"success": True, **done.to_json()}


def runs(state: Any, limit: int) -> dict[str, Any]:
    return {"runs": recent_runs(state.settings.storage_path, max(1, min(limit, 100)))}


__all__ = ["decide", "graph", "memory_with_curve", "reviews", "runs", "search"]
