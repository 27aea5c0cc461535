"""The background embedder: everything submitted is embedded, in batches, and a failure stops
it quietly (search embeds what is missing itself)."""

from __future__ import annotations

import threading

from cortexgraph.storage.embedding_worker import BATCH, EmbeddingWorker
from cortexgraph.storage.models import Memory, new_id
from cortexgraph.storage.recent_saves import Neighbour, RecentSaves, clip


def _memories(n: int) -> list[Memory]:
    return [Memory(id=new_id(), content=f"memory {i}", created_at=1, last_used=1) for i in range(n)]


def test_every_submitted_memory_is_embedded_in_batches() -> None:
    batches: list[int] = []
    seen: set[str] = set()
    gate = threading.Event()

    def prefetch(memories):
        gate.wait(5)  # let the queue fill up behind the first batch
        batches.append(len(memories))
        seen.update(m.id for m in memories)

    worker = EmbeddingWorker(prefetch)
    memories = _memories(200)
    worker.submit(memories[:1])
    worker.submit(memories[1:])
    gate.set()
    assert worker.wait_idle(10)
    assert seen == {m.id for m in memories}
    assert max(batches) <= BATCH and len(batches) < 200


def test_a_failing_model_stops_the_worker_without_raising() -> None:
    def prefetch(memories):
        raise RuntimeError("no model")

    worker = EmbeddingWorker(prefetch)
    worker.submit(_memories(3))
    assert worker.wait_idle(10)
    assert worker.failed is not None and "no model" in worker.failed
    worker.submit(_memories(1))  # ignored from now on
    assert worker.wait_idle(1)


def test_close_stops_after_the_batch_in_hand_and_drops_the_queue() -> None:
    started, release = threading.Event(), threading.Event()
    batches: list[int] = []

    def prefetch(memories):
        started.set()
        release.wait(5)  # the first batch is "inside the model" when close is called
        batches.append(len(memories))

    worker = EmbeddingWorker(prefetch, batch=4)
    worker.submit(_memories(1))
    assert started.wait(5)
    worker.submit(_memories(40))  # queued behind the batch in hand
    closer = threading.Thread(target=lambda: results.append(worker.close(timeout=5)))
    results: list[bool] = []
    closer.start()
    release.set()
    closer.join(10)
    assert results == [True]  # the thread ended: nothing runs into interpreter shutdown
    assert batches == [1]  # the 40 queued were dropped, not embedded first
    worker.submit(_memories(2))  # a closed worker takes nothing more
    assert batches == [1]


def test_close_without_a_thread_is_immediate() -> None:
    assert EmbeddingWorker(lambda memories: None).close(timeout=0) is True


def test_the_previous_save_counts_only_within_the_window() -> None:
    recent = RecentSaves(window_s=60)
    recent.record("chat", Neighbour("a", "x" * 2000, 1000.0))
    assert recent.previous("chat", 1030.0).memory_id == "a"
    assert recent.previous("chat", 1061.0) is None  # too late: not a neighbour
    assert recent.previous("other", 1030.0) is None  # another conversation
    assert len(clip("x" * 2000)) <= 600


def test_an_empty_submit_leaves_the_worker_idle() -> None:
    # Nothing queued: nothing will set "idle" again, so the worker must not look busy
    # (the stats the bench and callers wait on would never settle).
    worker = EmbeddingWorker(lambda memories: None)
    worker.submit([])
    assert not worker.busy
    assert worker.wait_idle(0)
    worker.submit(_memories(2))
    assert worker.wait_idle(5) and not worker.busy


def test_a_memory_submitted_again_while_it_waits_is_queued_once_in_its_latest_version() -> None:
    """A search hands back what it left for later, every search: after a burst of saves the
    queue (and cortexgraph://stats' embeddings_pending) grew by the whole burst each time."""
    started, release = threading.Event(), threading.Event()
    embedded: list[Memory] = []

    def prefetch(memories):
        started.set()
        release.wait(5)  # the first batch is in hand while the others are submitted
        embedded.extend(memories)

    worker = EmbeddingWorker(prefetch)
    in_hand = _memories(1)
    worker.submit(in_hand)
    assert started.wait(5)
    waiting = _memories(3)
    for _ in range(5):
        worker.submit(waiting)
        worker.submit(in_hand)  # the version being embedded: not queued again
    edited = Memory(id=waiting[0].id, content="memory 0, edited", created_at=1, last_used=2)
    worker.submit([edited])
    assert worker.pending == 4  # the one in hand and the three waiting
    changed = Memory(id=in_hand[0].id, content="in hand, edited", created_at=1, last_used=2)
    worker.submit([changed])  # another version of the one in hand: queued, counted once
    assert worker.pending == 4
    release.set()
    assert worker.wait_idle(10)
    assert sorted(m.content for m in embedded[1:]) == [
        "in hand, edited",
        "memory 0, edited",
        "memory 1",
        "memory 2",
    ]
    assert worker.pending == 0


def test_catch_up_waits_for_a_short_backlog_once_the_pace_is_known() -> None:
    release = threading.Event()
    held = threading.Event()
    embedded: set[str] = set()

    def prefetch(memories):
        if held.is_set():
            release.wait(5)
        embedded.update(m.id for m in memories)

    worker = EmbeddingWorker(prefetch)
    first = _memories(1)
    worker.submit(first)  # the batch that loads the model: it says nothing of the pace
    assert worker.wait_idle(10) and worker.pace_s is None
    held.set()
    backlog = _memories(3)
    worker.submit(backlog)
    assert worker.catch_up(60) is False  # no pace measured yet: not waited for
    release.set()
    assert worker.wait_idle(10) and worker.pace_s is not None
    release.clear()
    backlog = _memories(3)
    worker.submit(backlog)
    assert worker.catch_up(0) is False  # not done within the bound: not waited for
    threading.Timer(0.05, release.set).start()
    assert worker.catch_up(60) is True  # done well within it: waited for
    assert {m.id for m in backlog} <= embedded


def test_catch_up_waits_for_the_rows_not_for_the_spare_work_after_them() -> None:
    """The spare work (a line's own words) can take as long as the rows; a search needs the
    rows."""
    spare_started, release = threading.Event(), threading.Event()

    def spare():
        spare_started.set()
        release.wait(30)

    worker = EmbeddingWorker(lambda memories: None, spare=spare)
    worker.submit(_memories(1))  # the batch that loads the model
    assert spare_started.wait(5)
    release.set()
    assert worker.wait_idle(10)
    release.clear()
    spare_started.clear()
    worker.submit(_memories(2))
    assert spare_started.wait(5)
    assert worker.busy and worker.pending == 1  # stats: not all done yet
    assert worker.catch_up(30) is True  # the rows are
    release.set()
    assert worker.wait_idle(10) and worker.pending == 0
