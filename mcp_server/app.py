"""The server object: settings read once, the store opened once, tools registered.

The store is opened in a background thread when the lifespan starts, so ``initialize`` and
``tools/list`` never wait for a large store to load; the first tool that needs it waits.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus

from cortexgraph.mcp_server.recall_endpoint import serve_recall_endpoint
from cortexgraph.settings import Settings
from cortexgraph.storage import JSONLStore
from cortexgraph.storage.errors import CortexGraphError, StorageError
from cortexgraph.storage.recent_saves import RecentSaves
from cortexgraph.user_store import open_user_store

if TYPE_CHECKING:
    from cortexgraph.mcp_server.dense_scorer import LazyDenseScorer

log = logging.getLogger("cortexgraph.mcp")
T = TypeVar("T")

INSTRUCTIONS = (
    "cortexgraph is your temporal memory. Memories fade unless used. Search before answering "
    "questions about the user's past decisions, preferences or projects (search_memory, or "
    "search_unified to include the long-term vault); save durable facts, decisions and "
    "preferences with save_memory; after using a memory in an answer call observe_memory_usage "
    "so it is reinforced. When unsure whether a message is worth saving, call analyze_message: "
    "its action_recommendation is MUST_SAVE (the user asked: always save), SHOULD_SAVE (usually "
    "save, with its suggested entities, tags and strength), DUPLICATE_DETECTED (update the "
    "existing memory), SHOULD_SEARCH (search first) or NONE. Before answering a question about "
    "the past, analyze_for_recall says whether to search and with which query."
)


@dataclass
class ServerState:
    """What the lifespan yields and every tool reaches through ``state_of(ctx)``: settings,
    the store, the stats subscription bus, lazily built services."""

    settings: Settings
    # Tool calls that write publish cortexgraph://stats updates here (subscriptions/listen).
    subscriptions: InMemorySubscriptionBus = field(default_factory=InMemorySubscriptionBus)
    _store: JSONLStore | None = None
    _store_error: BaseException | None = None
    # The store's dense scorer, as built here (None with embeddings off or before the store
    # opens): the shell calls its background embedding, save and reset directly.
    _dense: LazyDenseScorer | None = None
    _opened: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _services: dict[str, Any] = field(default_factory=dict)
    _services_lock: threading.Lock = field(default_factory=threading.Lock)

    def open_in_background(self) -> None:
        if self._opened.is_set() or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._open, name="cortexgraph-open", daemon=True)
        self._thread.start()

    def _open(self) -> None:
        try:
            from cortexgraph.mcp_server.dense_scorer import LazyDenseScorer

            dense = LazyDenseScorer(self.settings) if self.settings.enable_embeddings else None
            # Stores from before the monitor had its own ledger hold its records as memories:
            # open_user_store moves them out first, as every other shell does.
            self._store = open_user_store(self.settings, dense)
            self._dense = dense
            log.info(
                "cortexgraph: opened store %s (%d memories)", self._store.path, len(self._store)
            )
        except BaseException as exc:  # reported to every tool call below
            self._store_error = exc
            log.error("cortexgraph: cannot open store %s: %s", self.settings.storage_path, exc)
        finally:
            self._opened.set()

    @property
    def store(self) -> JSONLStore:
        self.open_in_background()
        self._opened.wait()
        if self._store is None:
            raise StorageError(
                f"the store at {self.settings.storage_path} could not be opened: "
                f"{self._store_error}. Fix CORTEXGRAPH_STORAGE_PATH and restart the server."
            )
        return self._store

    def resource_store(self) -> JSONLStore:
        """The store for a resource read: a store that cannot open is a ResourceError."""
        from mcp.server.mcpserver.exceptions import ResourceError

        try:
            return self.store
        except CortexGraphError as exc:
            raise ResourceError(str(exc)) from exc

    def recent_saves(self) -> RecentSaves:
        """The memory saved just before, per conversation (a save's derived context)."""
        window = self.settings.save_context_window_s if self.settings.save_neighbour_context else -1
        return self.service("recent-saves", lambda: RecentSaves(window))

    @property
    def dense(self) -> LazyDenseScorer | None:
        """The store's dense scorer (waits for the store); None with embeddings off."""
        _ = self.store
        return self._dense

    def embed_soon(self, memories: list[Any]) -> None:
        """Queue just-saved memories for the background embedder (no-op without embeddings)."""
        dense = self.dense
        if dense is not None:
            dense.embed_later(memories)

    def save_embeddings(self) -> None:
        """Stop the background embedder and write the loaded vectors back to the embedding
        cache (at shutdown); nothing when the store never opened, embeddings are off or no
        vector was loaded."""
        if self._dense is not None:
            self._dense.close()
            self._dense.save()

    def service(self, name: str, build: Callable[[], T]) -> T:
        """Build a collaborator (vault, tracker, model ...) once, on first use."""
        with self._services_lock:
            if name not in self._services:
                self._services[name] = build()
            built: T = self._services[name]
            return built


# What a tool handler declares as its ``ctx``: the SDK injects it, with the lifespan's state.
ServerContext = Context[ServerState, Any]


def state_of(ctx: ServerContext) -> ServerState:
    """The state the lifespan yielded, as every tool handler reaches it."""
    return ctx.request_context.lifespan_context


@dataclass(frozen=True, slots=True)
class ServerApp:
    """The registered server and the state its lifespan yields (for the runners and tests)."""

    server: MCPServer[ServerState]
    state: ServerState


def build_server(settings: Settings | None = None) -> MCPServer[ServerState]:
    """A fully registered server. ``settings`` defaults to the environment, read now."""
    return build_app(settings).server


def build_app(settings: Settings | None = None) -> ServerApp:
    """The server and its state. Tools reach the state through the lifespan (``state_of``);
    static resources and the middleware, which get no ``ctx``, are handed it at registration."""
    settings = settings or Settings()
    state = ServerState(settings)

    @asynccontextmanager
    async def lifespan(_: MCPServer[ServerState]) -> AsyncIterator[ServerState]:
        state.open_in_background()
        try:
            async with anyio.create_task_group() as hooks_endpoint:
                # Claude Code hooks ask this server's search (mcp_server/recall_endpoint.py).
                await hooks_endpoint.start(serve_recall_endpoint, state)
                yield state
                hooks_endpoint.cancel_scope.cancel()
        finally:
            state.save_embeddings()

    from cortexgraph import __version__ as server_version

    server: MCPServer[ServerState] = MCPServer(
        "cortexgraph",
        version=server_version,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level=_level(settings.log_level),
        subscriptions=state.subscriptions,
    )
    from cortexgraph.mcp_server import (
        resources,
        tools_activation,
        tools_consolidation,
        tools_context,
        tools_gc,
        tools_lifecycle,
        tools_ltm,
        tools_monitor,
        tools_save,
        tools_search,
        tools_undo,
    )

    # Tool handlers find the state through their ctx; static resources and middleware get no
    # ctx, so the modules that add them are handed the state here.
    tools_save.register(server)
    tools_search.register(server)
    tools_gc.register(server)
    tools_ltm.register(server)
    tools_activation.register(server)
    tools_consolidation.register(server)
    tools_context.register(server, state)
    tools_lifecycle.register(server, state)  # its middleware records the session's calls
    resources.register(server, state)
    tools_monitor.register(server, state)  # behaviour monitor (activation.monitor)
    tools_undo.register(server)  # undo and history (agents.undo, agents.history)
    from cortexgraph.mcp_server.errors import clip_errors

    server.middleware.append(clip_errors)  # no error text echoes a huge input
    return ServerApp(server, state)


def _level(name: str) -> Any:
    name = name.upper()
    return name if name in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"} else "INFO"


__all__ = [
    "INSTRUCTIONS",
    "ServerApp",
    "ServerContext",
    "ServerState",
    "build_app",
    "build_server",
    "state_of",
]
