"""Process entry points for the concurrency tests (importable by ``spawn`` children)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_memories(
    path: str, worker: int, count: int, shared_id: str, touches: int, start: Any
) -> None:
    from cortexgraph.storage import JSONLStore

    store = JSONLStore(Path(path))
    start.wait()
    for i in range(count):
        store.save(f"worker {worker} memory {i}", tags=[f"w{worker}"], now=1_700_000_000 + i)
        if i < touches:
            store.touch(shared_id, now=1_700_000_000 + i)


def compact_repeatedly(path: str, times: int, start: Any) -> None:
    import time

    from cortexgraph.storage import JSONLStore

    store = JSONLStore(Path(path))
    start.wait()
    for _ in range(times):
        store.compact()
        time.sleep(0.01)


def reopen_and_write(path: str, worker: int, count: int, start: Any) -> None:
    """Open the store afresh (from its snapshot when there is one) before every save."""
    from cortexgraph.storage import JSONLStore, StoreConfig

    config = StoreConfig(snapshot_min_bytes=1)
    start.wait()
    for i in range(count):
        store = JSONLStore(Path(path), config=config)
        store.save(f"reopener {worker} memory {i}", now=1_700_000_000 + i)
