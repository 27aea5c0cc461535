"""One store open in a fresh process, for bench/open_bench.py (prints one JSON line).

    python _open_worker.py cold|first|reopen|compact STORE_DIR QUERY

cold: the JSONL alone (no index snapshot read or written); first: the JSONL, then the snapshot
written, as a big store's first open does; reopen: from the snapshot; compact: an open, then
one memory in 100 touched, then ``compact()`` as ``cortexgraph-maintenance compact`` runs it
(timed apart: ``compact_cpu``, ``compact_wall``). The imports (numpy and the storage package)
are timed apart from the open.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path


def peak_rss_mb() -> float:
    """This process's peak RSS. VmHWM starts afresh at exec; ru_maxrss keeps the high-water
    mark of the parent that forked it (the bench, which held a whole store)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    mode, path, query = sys.argv[1:4]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    import numpy  # noqa: F401  # the open needs it; timed with the imports

    import cortexgraph.storage
    from cortexgraph.storage import JSONLStore, StoreConfig

    cpu1, wall1 = time.process_time(), time.perf_counter()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    config = StoreConfig(snapshot_min_bytes=2**62) if mode == "cold" else StoreConfig()
    store = JSONLStore(path, config)
    cpu2, wall2 = time.process_time(), time.perf_counter()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    store.search(query, top_k=10, use_embeddings=False)
    first_search = time.perf_counter() - wall2
    compact = {}
    if mode == "compact":
        # Something for it to drop, as in use: one memory in 100 used since (a whole new line
        # each), so the rewrite differs from the file and the old snapshot no longer fits it.
        with store.writing():
            for memory in store.list()[::100]:
                store.touch(memory.id)
        cpu3, wall3 = time.process_time(), time.perf_counter()
        store.compact()
        compact = {
            "compact_cpu": time.process_time() - cpu3,
            "compact_wall": time.perf_counter() - wall3,
        }
    print(
        json.dumps(
            {
                **compact,
                "import_cpu": cpu1 - cpu0,
                "import_wall": wall1 - wall0,
                "open_cpu": cpu2 - cpu1,
                "open_wall": wall2 - wall1,
                # pages first touched by the open (~2 us each on the 2-core VM: new objects)
                "open_page_faults": faults,
                "first_search_ms": first_search * 1e3,
                "peak_rss_mb": peak_rss_mb(),
                "memories": len(store),
                "code": cortexgraph.storage.__file__,
            }
        )
    )


if __name__ == "__main__":
    main()
