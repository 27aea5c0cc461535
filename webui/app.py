"""The web view's FastAPI app: a page, its script, and a small JSON API over one store.

Only for 127.0.0.1: requests must name a local host (no DNS rebinding) and every change
(approve/reject, undo) must carry the ``X-CortexGraph`` header, which a foreign page cannot send
without a CORS preflight that this app never answers.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.middleware.trustedhost import TrustedHostMiddleware
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from cortexgraph.settings import Settings
from cortexgraph.storage.errors import CortexGraphError, InvalidInputError, NotFoundError
from cortexgraph.webui import memory_views, views

STATIC = Path(__file__).resolve().parent / "static"
LOCAL_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
CHANGE_HEADER = "x-cortexgraph"


class WebState:
    """The store, opened once; the LTM index and tracker, opened on first use."""

    def __init__(self, settings: Settings, use_embeddings: bool) -> None:
        from cortexgraph.storage import open_store

        self.settings = settings
        self.lock = threading.Lock()  # one change at a time (FastAPI runs sync routes in threads)
        dense = None
        self.embedder = None
        if use_embeddings and settings.enable_embeddings:
            from cortexgraph.storage.embeddings import MatrixDenseIndex, default_cache

            self.embedder = default_cache(settings.storage_path)
            dense = MatrixDenseIndex(self.embedder) if self.embedder is not None else None
        self.store = open_store(settings.storage_path, settings.store_config(), dense=dense)

    def ltm_index(self) -> Any:
        from cortexgraph.vault_sync import LTMIndex

        vault = self.settings.vault_path
        return LTMIndex.open(vault) if vault.is_dir() else None

    def tracker(self) -> Any:
        """The beads tracker where the settings put it; None when there is none yet."""
        from cortexgraph.storage.beads import open_tracker

        s = self.settings
        if not s.beads_enabled:
            return None
        location, parents = (s.beads_repo, True) if s.beads_repo else (s.storage_path, False)
        try:
            return open_tracker(location, s.beads_prefix, search_parents=parents, init=False)
        except CortexGraphError:
            return None


def _change_allowed(request: Request) -> None:
    if request.headers.get(CHANGE_HEADER) != "1":
        raise HTTPException(403, "changes need the X-CortexGraph: 1 header")


def create_app(settings: Settings, *, use_embeddings: bool = True) -> FastAPI:
    state = WebState(settings, use_embeddings)
    app = FastAPI(title="cortexgraph", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=LOCAL_HOSTS)

    @app.middleware("http")
    async def _no_framing(request: Request, call_next: Any) -> Any:
        # No other origin may frame the page (Approve/Reject could be clickjacked).
        response = await call_next(request)
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Content-Security-Policy"] = "frame-ancestors 'none'"
        return response

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.state.cortexgraph = state

    @app.exception_handler(CortexGraphError)
    async def _typed(_: Request, exc: CortexGraphError) -> JSONResponse:
        code = 404 if isinstance(exc, NotFoundError) else 400
        return JSONResponse({"error": str(exc)}, status_code=code)

    @app.get("/")
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/api/search")
    def search(q: str = "", limit: int = 10) -> dict[str, Any]:
        if not 1 <= limit <= 100:
            raise InvalidInputError("limit must be 1-100")
        return views.search(state, q, limit)

    @app.get("/api/graph")
    def graph(max_nodes: int = 400) -> dict[str, Any]:
        return views.graph(state, max_nodes)

    @app.get("/api/memories")
    def memories(
        status: str = "",
        tag: str = "",
        entity: str = "",
        min_age_days: float | None = None,
        max_age_days: float | None = None,
        offset: int = 0,
        limit: int = 25,
    ) -> dict[str, Any]:
        return memory_views.list_memories(
            state,
            now=time.time(),
            status=status,
            tag=tag,
            entity=entity,
            min_age_days=min_age_days,
            max_age_days=max_age_days,
            offset=offset,
            limit=limit,
        )

    @app.get("/api/memory/{memory_id}/history")
    def memory_history(memory_id: str) -> dict[str, Any]:
        return memory_views.memory_page(state, memory_id)

    @app.post("/api/memory/{memory_id}/undo/{action}")
    def undo(memory_id: str, action: str, request: Request) -> dict[str, Any]:
        _change_allowed(request)
        with state.lock:
            return memory_views.undo(state, action, memory_id, time.time())

    @app.get("/api/memory/{memory_id}")
    def memory(memory_id: str, days: float = 30.0) -> dict[str, Any]:
        return views.memory_with_curve(state, memory_id, time.time(), days)

    @app.get("/api/reviews")
    def reviews() -> dict[str, Any]:
        return views.reviews(state)

    @app.post("/api/reviews/{issue_id}/{decision}")
    def decide(issue_id: str, decision: str, request: Request) -> dict[str, Any]:
        _change_allowed(request)
        if decision not in ("approve", "reject"):
            raise HTTPException(404, "decide with /approve or /reject")
        with state.lock:
            return views.decide(state, issue_id, decision, time.time())

    @app.get("/api/runs")
    def runs(limit: int = 10) -> dict[str, Any]:
        return views.runs(state, limit)

    return app


__all__ = ["create_app"]
