"""One benchmark phase for one implementation; prints a JSON line. Runs under either venv.

python _storage_worker.py write  ours|reference DATASET DIR
python _storage_worker.py search ours|reference DATASET DIR
python _storage_worker.py cold   ours DATASET DIR   (JSONL only: no index snapshot read or written)
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time

SINGLE_SAVES = 2000  # timed one by one; the rest are written in one batch


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


class Ours:
    def __init__(self, path: str) -> None:
        from cortexgraph.storage import JSONLStore

        self.store = JSONLStore(path)

    def save(self, rec: dict) -> None:
        self.store.save(rec["content"], tags=rec["tags"], now=rec["t"])

    def save_batch(self, recs: list[dict]) -> None:
        from cortexgraph.storage.models import Memory, MemoryMeta

        self.store.put_many(
            Memory(
                id=r["id"],
                content=r["content"],
                meta=MemoryMeta(tags=tuple(r["tags"])),
                created_at=r["t"],
                last_used=r["t"],
            )
            for r in recs
        )

    def search(self, query: str) -> list[str]:
        return [r.memory.id for r in self.store.search(query, top_k=10, use_embeddings=False)]

    def content_of(self, mid: str) -> str:
        return self.store.get(mid).content


class Reference:
    def __init__(self, path: str) -> None:
        import logging

        logging.disable(logging.WARNING)
        from pathlib import Path

        from cortexgraph.storage.jsonl_storage import JSONLStorage

        self.store = JSONLStorage(storage_path=Path(path))
        self.store.connect()

    def _memory(self, rec: dict, with_id: bool):
        import uuid

        from cortexgraph.storage.models import Memory, MemoryMetadata

        return Memory(
            id=rec["id"] if with_id else str(uuid.uuid4()),
            content=rec["content"],
            meta=MemoryMetadata(tags=rec["tags"]),
            created_at=rec["t"],
            last_used=rec["t"],
        )

    def save(self, rec: dict) -> None:
        self.store.save_memory(self._memory(rec, with_id=False))

    def save_batch(self, recs: list[dict]) -> None:
        self.store.save_memories_batch([self._memory(r, with_id=True) for r in recs])

    def search(self, query: str) -> list[str]:
        import cortexgraph.tools.search as tool

        tool.db = self.store  # the MCP tool, as Claude calls it
        out = tool.search_memory(query=query, top_k=10)
        return [r["id"] for r in out.get("results", [])]

    def content_of(self, mid: str) -> str:
        return self.store.get_memory(mid).content


def main() -> None:
    phase, impl, dataset, path = sys.argv[1:5]
    with open(dataset) as f:
        data = json.load(f)
    recs = data["memories"]
    cls = Ours if impl == "ours" else Reference
    if phase == "write":
        t0 = time.perf_counter()
        store = cls(path)
        single = recs[:SINGLE_SAVES]
        lat = []
        for rec in single:
            t = time.perf_counter()
            store.save(rec)
            lat.append(time.perf_counter() - t)
        if len(recs) > SINGLE_SAVES:
            store.save_batch(recs[SINGLE_SAVES:])
        print(
            json.dumps(
                {
                    "save_p50_ms": statistics.median(lat) * 1e3,
                    "saves_per_s": len(single) / sum(lat),
                    "write_s": time.perf_counter() - t0,
                }
            )
        )
        return
    if phase == "cold":  # ours only, before any snapshot exists
        from cortexgraph.storage import JSONLStore, StoreConfig

        t = time.perf_counter()
        cold = JSONLStore(path, StoreConfig(snapshot_min_bytes=2**62))
        cold_s = time.perf_counter() - t
        t = time.perf_counter()
        cold.search(data["queries"][0], top_k=10, use_embeddings=False)
        first = time.perf_counter() - t
        print(json.dumps({"cold_s": cold_s, "cold_first_search_ms": first * 1e3}))
        return
    before = rss_mb()
    t = time.perf_counter()
    store = cls(path)  # ours: a cold load from JSONL, then writes the index snapshot
    load_s = time.perf_counter() - t
    rss = rss_mb() - before
    rng = random.Random(7)
    lat = []
    for q in data["queries"]:
        t = time.perf_counter()
        store.search(q)
        lat.append(time.perf_counter() - t)
    # Quality: a memory queried by a word only it contains must come back first.
    by_word = dict(rng.sample(sorted(data["unique"].items()), min(200, len(data["unique"]))))
    content_of = {r["content"]: w for r in recs for w in [r["unique"]] if w in by_word}
    hits = 0
    for word in by_word:
        ids = store.search(word)
        hits += bool(ids) and content_of.get(store.content_of(ids[0])) == word
    # A second open: ours reads the index snapshot the first open wrote (1.2.1 has none).
    del store
    t = time.perf_counter()
    reopened = cls(path)
    reopen_s = time.perf_counter() - t
    t = time.perf_counter()
    reopened.search(data["queries"][1])
    reopen_first_ms = (time.perf_counter() - t) * 1e3
    print(
        json.dumps(
            {
                "load_s": load_s,
                "reopen_s": reopen_s,
                "reopen_first_search_ms": reopen_first_ms,
                "rss_mb": rss,
                "search_p50_ms": pct(lat, 0.5) * 1e3,
                "search_p95_ms": pct(lat, 0.95) * 1e3,
                "found_first_pct": 100.0 * hits / len(by_word),
            }
        )
    )


if __name__ == "__main__":
    main()
