"""The server's state: settings, the store (opened in the background) and the services the
tools share, each a named, typed property built on first use.

Tool modules import this module and never ``app``: ``app`` builds the server and hands each
tool module's ``register(server, state)`` this state.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.subscriptions import InMemorySubscriptionBus

from cortexgraph.settings import Settings
from cortexgraph.storage import JSONLStore
from cortexgraph.storage.errors import CortexGraphError, StorageError
from cortexgraph.storage.recent_saves import RecentSaves
from cortexgraph.user_store import open_user_store

if TYPE_CHECKING:
    from cortexgraph.activation.context import ConversationContext
    from cortexgraph.activation.monitor import BehaviorLedger
    from cortexgraph.mcp_server.dense_scorer import LazyDenseScorer
    from cortexgraph.mcp_server.session_log import SessionLog
    from cortexgraph.vault_sync.ltm_index import LTMIndex
    from cortexgraph.vault_sync.note_sink import ObsidianNoteSink

log = logging.getLogger("cortexgraph.mcp")
T = TypeVar("T")


@dataclass
class ServerState:
    """What the lifespan yields and every tool reaches through ``state_of(ctx)``: settings,
    the store, the stats subscription bus, and the services below, each built on first use."""

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
    # Tool calls and the hooks' recall endpoint run in worker threads; a refresh of the vault's
    # index changes its notes and BM25 postings in place, so it never overlaps a reading.
    _vault_lock: threading.RLock = field(default_factory=threading.RLock)
    _closing: bool = False  # shut down: a store that opens now starts no background embedder

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
            if dense is not None and not self._closing:
                dense.follow(self._store)  # what other processes write: embedded in the background
            log.info(
                "cortexgraph: opened store %s (%d memories)", self._store.path, len(self._store)
            )
        except BaseException as exc:  # reported to every tool call below
            self._store_error = exc
            log.error("cortexgraph: cannot open store %s: %s", self.settings.storage_path, exc)
        finally:
            self._opened.set()
        # Opened from a snapshot, the store reads its search index at the first search; this
        # thread is the server's start-up, so the first search_memory need not wait for it.
        if self._store is not None and not self._closing:
            try:
                self._store.load_search_index()
            except Exception as exc:  # the first search reads it again, and says what failed
                log.warning("cortexgraph: search index not read ahead: %s", exc)

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

    @property
    def opened_store(self) -> JSONLStore | None:
        """The store once it has opened (None before, or when it could not); never waits:
        for background work that must not hold up the event loop."""
        return self._store

    def resource_store(self) -> JSONLStore:
        """The store for a resource read: a store that cannot open is a ResourceError."""
        from mcp.server.mcpserver.exceptions import ResourceError

        try:
            return self.store
        except CortexGraphError as exc:
            raise ResourceError(str(exc)) from exc

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
        self._closing = True
        if self._dense is not None:
            self._dense.close()
            self._dense.save()

    # Named services, each built once on first use (its package imported then, never at
    # start-up) and shared by every tool that needs it.

    @property
    def recent_saves(self) -> RecentSaves:
        """The memory saved just before, per conversation (a save's derived context)."""
        s = self.settings
        return self.service(
            "recent-saves",
            lambda: RecentSaves.configured(s.save_neighbour_context, s.save_context_window_s),
        )

    @property
    def session_log(self) -> SessionLog:
        """What this server session saved, recalled and called (cortexgraph://session/current)."""
        from cortexgraph.mcp_server.session_log import SessionLog

        return self.service("session_log", SessionLog)

    @property
    def clusters(self) -> dict[str, Any]:
        """Clusters the last cluster_memories call found, by id (for consolidate_memories)."""
        return self.service("clusters", dict)

    @property
    def conversations(self) -> ConversationContext:
        """The recent turns of each conversation (CORTEXGRAPH_CONTEXT_WINDOW_SIZE per session)."""
        from cortexgraph.activation import ActivationConfig
        from cortexgraph.activation.context import ConversationContext

        turns = ActivationConfig.from_mapping(self.settings).context_turns
        return self.service("conversation-context", lambda: ConversationContext(max_turns=turns))

    @property
    def monitor_ledger(self) -> BehaviorLedger:
        """The behaviour monitor's own ledger store, beside the user's store (never in it).

        The user's store opens first: opening it moves any records an older version left there
        (bm.*) into this ledger."""
        from cortexgraph.activation.monitor import open_ledger

        return self.service("monitor-ledger", lambda: open_ledger(self.store.path))

    @property
    def ltm_index(self) -> LTMIndex | None:
        """The vault's LTM index, opened once (callers refresh it); None without a vault."""
        vault = self.settings.vault_path
        if not vault.is_dir():
            return None
        from cortexgraph.vault_sync.ltm_index import LTMIndex

        return self.service("ltm_index", lambda: LTMIndex.open(vault, refresh=False))

    @contextmanager
    def fresh_ltm_index(self, wait_s: float | None = None) -> Iterator[LTMIndex | None]:
        """The vault's index with changed notes re-read, held for the caller's reading (no other
        thread refreshes it meanwhile); None without a vault, or when another thread has held
        it for ``wait_s`` seconds (None: as long as it takes)."""
        index = self.ltm_index
        if index is None:
            yield None
            return
        if not self._vault_lock.acquire(timeout=-1 if wait_s is None else wait_s):
            yield None
            return
        try:
            index.refresh()
            yield index
        finally:
            self._vault_lock.release()

    @property
    def note_sink(self) -> ObsidianNoteSink:
        """The vault writer (promotions, merges), one per server. The server creates the vault
        it is configured with as it creates its store (nobody is there to make a folder first),
        unless its parent folder is missing too: a mistyped path (VaultNotFoundError, an error
        result naming the path; ``Settings.unattended_vault_may_be_created``)."""
        from cortexgraph.vault_sync.note_sink import ObsidianNoteSink

        s = self.settings
        return self.service(
            "note_sink",
            lambda: ObsidianNoteSink(
                s.vault_path, s.ltm_promoted_folder, create=s.unattended_vault_may_be_created
            ),
        )

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


__all__ = ["ServerContext", "ServerState", "state_of"]
