"""Embedding off the request path: saves return at once, vectors follow in batches.

A save through the MCP server costs a few milliseconds; embedding its text costs 10-20 ms of
one core (more on a loaded machine). The server hands each saved memory's id to an
``EmbeddingWorker``, whose thread embeds whatever has queued up in one batch (batching is
several times cheaper per text) into the embedding cache. Search then finds the vectors
ready; a memory still queued ranks by BM25 until it is embedded (storage.search embeds at
most a few such memories itself and queues the rest, e.g. a store opened without a cache).
The JSONL record is written before the memory is queued, so a crash here loses a cache
entry, never a memory.

While nothing is queued the thread can look for work of its own every ``idle_s`` seconds
(``idle``: the MCP server's look at what other processes wrote, mcp_server/store_pickup.py),
and submit what it finds.

A memory is queued once: submitting it again while it waits (a search hands back what it left
for later, every search) only replaces the version to embed, and the version being embedded is
not queued again. Before, each search after a burst
of 600 saves queued the 600 again: ``pending`` (cortexgraph://stats' embeddings_pending) read
8,600 for a store of 629 memories. ``catch_up`` lets a search wait for the rows a backlog still
lacks when the worker would embed them within a bound, at the pace measured on its own batches;
``spare`` work (a line's own words) comes after the rows and is not waited for.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence

from cortexgraph.storage.models import Memory

log = logging.getLogger(__name__)

BATCH = 64
IDLE_S = 2.0  # how often an idle worker looks for work of its own (``idle``)
PACE_WEIGHT = 0.3  # the last batch's share of the measured pace (seconds per memory)


class EmbeddingWorker:
    """One daemon thread: ``submit(memories)`` queues, ``prefetch(memories)`` embeds a batch;
    ``spare()``, when given, runs after a batch while nothing else is queued (work of lower
    priority, that yields to ``waiting``); ``idle()``, when given, is called in the thread every
    ``idle_s`` seconds the queue stays empty, to submit work of its own (from ``start()`` on, not
    only after a first submit)."""

    def __init__(
        self,
        prefetch: Callable[[Sequence[Memory]], None],
        batch: int = BATCH,
        idle: Callable[[], None] | None = None,
        idle_s: float = IDLE_S,
        spare: Callable[[], None] | None = None,
    ) -> None:
        self._prefetch = prefetch
        self._spare = spare
        self._batch = batch
        self._idle_look = idle
        self._idle_s = idle_s
        # Ids in order; the version to embed of each queued id (the latest submitted).
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._queued: dict[str, Memory] = {}
        self._in_hand: dict[str, Memory] = {}  # the batch being embedded
        self._rows_left = 0  # memories queued or in hand (one in both counts once)
        self._rows_done = threading.Event()  # every submitted memory's batch is embedded
        self._rows_done.set()
        self._idle = threading.Event()  # that, and the spare work after it
        self._idle.set()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopping = False
        self._pace_s: float | None = None  # seconds per memory of the batches so far
        self._batches = 0
        self.failed: str | None = None  # why embedding stopped (the model is unavailable)

    def submit(self, memories: Iterable[Memory]) -> None:
        memories = list(memories)
        if self.failed is not None or self._stopping or not memories:
            return  # nothing queued: the worker stays idle (an empty batch never sets it again)
        with self._lock:
            self._idle.clear()
            self._rows_done.clear()
            for memory in memories:
                if memory.id not in self._queued:
                    if self._in_hand.get(memory.id) is memory:
                        continue  # this very version is being embedded
                    self._queue.put(memory.id)
                    self._rows_left += memory.id not in self._in_hand
                self._queued[memory.id] = memory
            self._start_locked()

    def start(self) -> None:
        """Start the thread now (it idles, looking with ``idle`` when given)."""
        with self._lock:
            if not self._stopping:
                self._start_locked()

    def _start_locked(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="cortexgraph-embed", daemon=True)
            self._thread.start()

    @property
    def looking(self) -> bool:
        """The idle look runs (given, and neither it nor the embedding failed)."""
        return self._idle_look is not None and self.failed is None and not self._stopping

    @property
    def busy(self) -> bool:
        """Something submitted is not embedded yet."""
        return not self._idle.is_set()

    @property
    def pending(self) -> int:
        """How many submitted memories are not embedded yet; 1 while only the spare work after
        them is left (0 once idle)."""
        return max(self._rows_left, int(self.busy))

    @property
    def waiting(self) -> bool:
        """Memories are queued beyond the batch in hand (read from the worker's own thread:
        work of lower priority yields to them)."""
        return not self._queue.empty()

    @property
    def pace_s(self) -> float | None:
        """Seconds per memory (its row's text and its own words) measured on the batches
        embedded so far, the first one left out: it loads the model."""
        return self._pace_s

    def catch_up(self, max_s: float) -> bool:
        """Wait for every memory submitted so far to be embedded when, at the measured pace, that
        takes at most ``max_s`` seconds; never longer than ``max_s``. A bigger backlog, or none
        measured yet, is not waited for, nor is the spare work. True once none is left."""
        if self._rows_done.is_set():
            return True
        pace = self._pace_s
        if pace is None or self.failed is not None or self._rows_left * pace > max_s:
            return False
        return self._rows_done.wait(max_s)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """True once everything submitted so far is embedded (for tests and shutdown)."""
        return self._idle.wait(timeout)

    def close(self, timeout: float = 10.0) -> bool:
        """Stop after the batch in hand, dropping the rest of the queue (those memories are
        embedded by a later search or process: a cache entry is lost, never a memory), and wait
        up to ``timeout`` s for the thread. At shutdown this keeps the interpreter from
        finalising under a thread that is inside the model's native code (ONNX Runtime then
        aborts the process: "terminate called without an active exception"). True once the
        thread has ended."""
        with self._lock:
            self._stopping = True
            thread = self._thread
            if thread is not None:
                self._queue.put(None)
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _take(self, memory_id: str) -> Memory:
        with self._lock:
            memory = self._in_hand[memory_id] = self._queued.pop(memory_id)
            return memory

    def _next(self) -> Memory | None:
        """The next queued memory (None: stop); while none comes, the idle look every
        ``idle_s`` seconds."""
        while True:
            if self._idle_look is None or self.failed is not None:
                memory_id = self._queue.get()
                return None if memory_id is None else self._take(memory_id)
            try:
                memory_id = self._queue.get(timeout=self._idle_s)
                return None if memory_id is None else self._take(memory_id)
            except queue.Empty:
                pass
            if self._stopping:
                return None
            try:
                self._idle_look()
            except Exception as exc:  # the look stops; what is submitted is still embedded
                self._idle_look = None
                log.warning("background embedding: stopped looking for new memories: %s", exc)

    def _run(self) -> None:
        while True:
            first = self._next()
            if first is None or self._stopping:
                return
            batch = [first]
            while len(batch) < self._batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)
                    break
                batch.append(self._take(nxt))
            started = time.perf_counter()
            try:
                self._prefetch(batch)
            except Exception as exc:  # search embeds what is missing itself
                self.failed = f"{type(exc).__name__}: {exc}"
                log.warning("background embedding stopped: %s", self.failed)
            pace = (time.perf_counter() - started) / len(batch)
            with self._lock:
                if self._batches:  # the first batch loads the model: it says nothing of the pace
                    last = self._pace_s
                    self._pace_s = (
                        pace if last is None else PACE_WEIGHT * pace + (1 - PACE_WEIGHT) * last
                    )
                self._batches += 1
                self._in_hand.clear()
                self._rows_left = len(self._queued)  # one submitted again meanwhile is queued
                if not self._queued:
                    self._rows_done.set()
            spare = self._spare
            if spare is not None and self.failed is None and self._queue.empty():
                try:
                    spare()
                except Exception as exc:  # the rows are still embedded
                    self._spare = None
                    log.warning("background embedding: stopped the spare work: %s", exc)
            with self._lock:
                if self._queue.empty():
                    self._idle.set()


__all__ = ["BATCH", "EmbeddingWorker"]
