"""What other processes wrote to the store, picked up by the server's background embedder.

A consolidation run (the CLI, a deployment: another process) writes the memories its merges
make; a Claude Code hook saves through the Python API. The server would embed their texts only
when a search needed them, and the next run would load the model to embed them itself (the
cluster step compares every changed memory with the whole store's vectors). So the background
embedder's idle loop looks every few seconds (storage.embedding_worker.IDLE_S): a ``stat`` of
the memories file and the generation file; once the memories file grew and then stayed as it
is for ``QUIET_S`` seconds (its writer is done: the server does not load the model and embed
beside a run that is still working on the same two cores), the ids in the lines appended since
the last look (cortexgraph.run_state.appended_ids, the rule an incremental run
uses) are read through the store, which applies the others' appends, and those still active
whose texts the embedding cache lacks are embedded and saved like the server's own saves.

Nothing is missing, nothing is loaded: the model loads only for a text to embed. The server's
own saves are in those lines too; they are queued already, and the cache check drops them once
embedded. After a rewrite of the file (compaction, a wipe, a quarantine) the look starts again
from the new file's end: a rewrite adds no memory. A line still being written is read at the
next look.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

QUIET_S = 5.0  # the memories file unchanged this long: its writer (a run, a hook) is done


class SettledFiles:
    """Whether files changed since they were last seen and then stayed as they are for a
    while, told by one ``stat`` per file per look. ``seen=False``: nothing seen yet, so the
    first look counts them as changed."""

    def __init__(self, paths: list[Path], seen: bool = True) -> None:
        from cortexgraph.run_state import files_now

        self._paths = paths
        self._seen = files_now(self._paths) if seen else {}
        self._since: tuple[dict[str, tuple[int, ...]], float] | None = None  # last seen, when

    def settled(self, quiet_s: float = QUIET_S, now: float | None = None) -> bool:
        """The files changed since the last look and have stayed as they are for ``quiet_s``
        seconds since a look first saw them so (``now``: ``time.monotonic()``)."""
        from cortexgraph.run_state import files_now

        stamp, at = files_now(self._paths), time.monotonic() if now is None else now
        if stamp == self._seen:
            self._since = None
            return False
        if self._since is None or self._since[0] != stamp:
            self._since = (stamp, at)
        return at - self._since[1] >= quiet_s

    def unseen(self) -> bool:
        """Either file changed since the last look."""
        from cortexgraph.run_state import files_now

        return files_now(self._paths) != self._seen

    def seen_settled(self) -> None:
        """The files as ``settled`` last found them are seen (a change since is not)."""
        if self._since is not None:
            self._seen, self._since = self._since[0], None


class AppendedLines(SettledFiles):
    """The memories file's lines appended since the last look (``take``), told by two ``stat``
    calls per look (``unseen``); the files as they are when it is made are the first mark."""

    def __init__(self, memories: Path, generation: Path) -> None:
        super().__init__([memories, generation])

    def take(self) -> tuple[set[str], Callable[[], None]]:
        """The ids in the lines appended since the last look, and what moves the mark past
        them (called once they are handed on: ``unseen`` stays true until then); none after
        a rewrite (the mark moves to the new file), nor while the last line is still being
        written (the mark stays: the next look reads it whole). A whole line that is no
        record (the store quarantines it) hides the ids of that look's lines: search embeds
        those when it needs them."""
        from cortexgraph.run_state import appended_ids, files_now

        now = files_now(self._paths)  # before the read: lines appended meanwhile come again
        if now == self._seen:
            return set(), _stay
        memories, generation = self._paths
        seen = self._seen
        if seen[str(memories)][0] == -1:  # no file at the last look: every line in it is new
            seen = {**now, str(memories): (now[str(memories)][0], 0, 0)}
        ids = appended_ids({"files": seen}, memories, generation)
        if ids is None and _torn(memories) and not _rewritten(seen, now, memories, generation):
            return set(), _stay

        def seen_now() -> None:
            self._seen = now

        return ids or set(), seen_now


def _stay() -> None:
    """The mark where it is."""


def _torn(path: Path) -> bool:
    """The file's last line is still being written (it does not end with a newline)."""
    try:
        with path.open("rb") as f:
            if f.seek(0, 2) == 0:
                return False
            f.seek(-1, 2)
            return f.read(1) != b"\n"
    except OSError:
        return False


def _rewritten(
    seen: dict[str, tuple[int, ...]], now: dict[str, tuple[int, ...]], memories: Path, gen: Path
) -> bool:
    old, new = seen[str(memories)], now[str(memories)]
    return seen[str(gen)] != now[str(gen)] or old[0] != new[0] or new[1] < old[1]


def active_among(store: Any, ids: set[str]) -> list[Any]:
    """The memories of ``ids`` that are active now, read through ``store`` (which first
    applies what other processes appended), in id order."""
    from cortexgraph.storage.models import MemoryStatus

    found = store.find_many(sorted(ids))  # one look at the files, not one per id
    return [m for m in found if m.status is MemoryStatus.ACTIVE]


__all__ = ["QUIET_S", "AppendedLines", "SettledFiles", "active_among"]
