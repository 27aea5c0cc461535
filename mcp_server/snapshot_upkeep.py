"""The store's load snapshots rewritten by the server once writes settle, not by the next open.

An open of the store rewrites its index snapshot once more than 1 MB of lines were appended
past it (``StoreConfig.snapshot_refresh_bytes``): at 100k memories ~1.2 s of that open, and the
next process to open is usually the hourly consolidation run. Most of those lines are the
server's own saves (and its entity reading's rewrite of them), and the server is idle most of
the time. So a task of the server's lifespan looks every ``LOOK_S`` seconds (a ``stat`` of the
store's three files): once they changed and then stayed as they are for
``snapshot_refresh_quiet_s`` seconds (whoever wrote them, a run or a hook included), and no
entity reading is due or running (its child's appends come next), it asks the store to
rewrite each snapshot with more than ``snapshot_refresh_tail_bytes`` of lines past it
(``JSONLStore.refresh_snapshots``, storage/snapshot_refresh.py), in a worker thread.

The refresh holds the store's lock only while it takes the view (18-34 ms at 100k memories)
and the file lock only to catch up and open the files; other processes' writes and opens go
on. Its Python work shares the interpreter's lock with the requests: a save made meanwhile
took up to 66-173 ms at 100k on two busy cores (docs/incremental.md). At shutdown the task is
cancelled; a refresh in progress is let finish (a second or so at 100k): its snapshot is written
whole or not at all.
``cortexgraph://stats`` says ``snapshot_pending`` while a refresh is due or running, for a
benchmark's run to wait for it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from cortexgraph.mcp_server.entity_reading import entities_pending
from cortexgraph.mcp_server.store_pickup import SettledFiles
from cortexgraph.storage.errors import CortexGraphError

if TYPE_CHECKING:
    from cortexgraph.mcp_server.state import ServerState

log = logging.getLogger("cortexgraph.mcp")

SERVICE = "snapshot-upkeep"
LOOK_S = 2.0  # how often the files are looked at


class SnapshotUpkeep:
    """When the server refreshes the store's snapshots (``look``), and whether it is due."""

    def __init__(self, state: ServerState) -> None:
        from cortexgraph.run_state import store_files

        s = state.settings
        self._state = state
        self._quiet_s = s.snapshot_refresh_quiet_s
        self.tail_bytes = s.snapshot_refresh_tail_bytes
        # Nothing seen yet: the first settled look checks the snapshots as the server found them.
        paths = store_files(s.storage_path, s.memories_filename, s.relations_filename)
        self._files = SettledFiles(paths, seen=False)
        self._refreshing = False
        self.refreshed = 0  # snapshots written

    @property
    def pending(self) -> bool:
        """A refresh is running, or due once the files settle: they changed since the last
        look and a snapshot is more than ``tail_bytes`` behind its file."""
        if self._refreshing:
            return True
        store = self._state.opened_store
        if store is None or not self._files.unseen():
            return False
        return any(tail > self.tail_bytes for tail in store.snapshot_tails().values())

    async def look(self) -> None:
        """Refresh the snapshots that are behind if the files have settled."""
        store = self._state.opened_store
        if store is None or not self._files.settled(self._quiet_s):
            return
        if entities_pending(self._state):  # its child writes next: refresh after that
            return
        self._refreshing = True
        try:
            self._files.seen_settled()
            written = await anyio.to_thread.run_sync(store.refresh_snapshots, self.tail_bytes)
        except (CortexGraphError, OSError) as exc:  # a cache: the next open writes it
            log.warning("cortexgraph: snapshot refresh failed: %s", exc)
            return
        finally:
            self._refreshing = False
        if written:
            self.refreshed += len(written)
            log.info("cortexgraph: refreshed %s", ", ".join(written))


def _upkeep(state: ServerState) -> SnapshotUpkeep | None:
    """The server's snapshot upkeep, made on first use (None when it is off)."""
    if not state.settings.snapshot_refresh_after_writes:
        return None
    return state.service(SERVICE, lambda: SnapshotUpkeep(state))


async def keep_snapshots_fresh(
    state: ServerState, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """The lifespan's task: a look every ``LOOK_S`` seconds until cancelled (shutdown)."""
    upkeep = _upkeep(state)
    task_status.started()
    if upkeep is None:
        return
    while True:
        await anyio.sleep(LOOK_S)
        try:
            await upkeep.look()
        except Exception:  # a bug here must not take the server down: the opens refresh
            log.exception("cortexgraph: snapshot refresh stopped")
            return


def snapshot_pending(state: ServerState) -> bool:
    """A snapshot refresh is running or due (``cortexgraph://stats``)."""
    upkeep = _upkeep(state)
    return upkeep is not None and upkeep.pending


__all__ = ["LOOK_S", "SnapshotUpkeep", "keep_snapshots_fresh", "snapshot_pending"]
