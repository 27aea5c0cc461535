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


def test_the_previous_save_counts_only_within_the_window() -> None:
    recent = RecentSaves(window_s=60)
    recent.record("chat", Neighbour("a", "x" * 2000, 1000.0))
    assert recent.previous("chat", 1030.0).memory_id == "a"
    assert recent.previous("chat", 1061.0) is None  # too late: not a neighbour
    assert recent.previous("other", 1030.0) is None  # another conversation
    assert len(clip("x" * 2000)) <= 600
