"""How much ``.git`` grows as runs commit the issue file, without packing and with it.

    python bench/beads_growth_bench.py [--issues 2300] [--runs 100] [--threshold-mb 32]

A store is seeded through the real tracker with ``--issues`` issues shaped like the cluster
detector's (a title, three memories quoted, labels, metadata: ~1 KB a line, as at 10k
memories: 2,323 issues, 2.28 MB). Then each run does what an incremental consolidation run
does to it: in one batch it opens 25 issues, claims and closes 24 of them: one commit of the
whole file. The same runs, on the same seed and clock (byte-identical files), go to two
copies of the store: one that never packs (what every commit did before pack.py) and one that
packs past ``--threshold-mb`` of loose objects (pack.PACK_THRESHOLD by default). Printed:
``.git``'s disk use (as ``du`` counts it) after so many runs in each, then the time of a run's
commit (the batch's end: file written, committed) without a pack and with one, and of packing
the never-packed copy at the end (``cortexgraph issues pack``).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cortexgraph.storage.beads import BeadsTracker, open_tracker
from cortexgraph.storage.beads.pack import PACK_THRESHOLD, dir_bytes, note_written, read_counter

sys.path.insert(0, str(Path(__file__).resolve().parent))

T0 = 1_767_225_600.0
_WORDS = (
    "postgres index vacuum replica backup schedule deploy kubernetes token cache latency "
    "python typing release branch review meeting tuesday budget invoice migration schema "
    "embedding vector search recall memory note vault cluster merge decay promote"
).split()


class Clock:
    """Deterministic time, one second a reading: both copies write the same bytes."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def _preview(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(18))


def _open_cluster(tracker: BeadsTracker, rng: random.Random) -> str:
    ids = [f"{rng.getrandbits(128):032x}" for _ in range(3)]
    listing = "\n".join(f"- {m[:8]}: {_preview(rng)}" for m in ids)
    cohesion = round(rng.uniform(0.8, 0.99), 4)
    issue = tracker.create(
        f"Merge 3 similar memories (cohesion {cohesion:.2f})",
        description=f"Similarity by embeddings.\n\n{listing}",
        labels=("consolidation:cluster", "action:merge", "consolidation:merge"),
        metadata={
            "cluster_id": f"c-{rng.getrandbits(48):012x}",
            "memory_ids": ids,
            "cohesion": cohesion,
            "action": "merge",
            "method": "embeddings",
        },
        dedupe_key=f"cluster:{rng.getrandbits(64):016x}",
    )
    return issue.id


def seed(store: Path, issues: int) -> None:
    tracker = open_tracker(store, search_parents=False, clock=Clock(), pack_threshold=None)
    rng = random.Random(1)
    with tracker.batch("seed"):
        opened = [_open_cluster(tracker, rng) for _ in range(issues)]
        for issue_id in opened[: issues * 9 // 10]:  # most are done by now
            tracker.close(issue_id, "merged 3 memories")


def one_run(tracker: BeadsTracker, rng: random.Random) -> float:
    """A run's changes in one batch; the seconds its end took (write, commit, any pack)."""
    with tracker.batch("consolidation"):
        opened = [_open_cluster(tracker, rng) for _ in range(25)]
        for issue_id in opened[:24]:
            tracker.claim(issue_id, "semantic-merge")
            tracker.close(issue_id, "merged 3 memories into one")
        ended = time.perf_counter()
    return time.perf_counter() - ended


def _check_seconds(tracker: BeadsTracker, counter: Path, times: int = 1000) -> float:
    """What every commit pays for the check below the threshold: HEAD's commit, tree, subtree
    and blob (packed now, so no file to stat: the same calls), into a scratch counter."""
    repo = tracker.repo
    head = repo.head.commit
    beads = head.tree / ".beads"
    shas = [head.binsha, head.tree.binsha, beads.binsha, (beads / "issues.jsonl").binsha]
    started = time.perf_counter()
    for _ in range(times):
        note_written(repo, counter, shas, None)
    return (time.perf_counter() - started) / times


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--issues", type=int, default=2300)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--threshold-mb", type=float, default=PACK_THRESHOLD / 2**20)
    parser.add_argument("--rows", type=int, default=4, help="rows of the size table")
    args = parser.parse_args()
    threshold = int(args.threshold_mb * 2**20)

    from _machine import machine_line

    with tempfile.TemporaryDirectory(prefix="beads-growth-") as tmp:
        seeded = Path(tmp) / "seed"
        started = time.perf_counter()
        seed(seeded, args.issues)
        seed_s = time.perf_counter() - started
        stores = {}
        for name, limit in (("never", None), ("packing", threshold)):
            shutil.copytree(seeded, Path(tmp) / name, symlinks=True)
            stores[name] = open_tracker(
                Path(tmp) / name, search_parents=False, clock=Clock(), pack_threshold=limit
            )
        file_bytes = stores["never"].path.stat().st_size
        print(
            f"{args.issues} issues seeded ({file_bytes / 1e6:.2f} MB file, {seed_s:.1f} s); "
            f"{args.runs} runs of 25 opened, 24 claimed and closed; threshold {args.threshold_mb:g} MB"
        )
        print(machine_line())

        every = max(1, args.runs // args.rows)
        print("\n| runs | issue file MB | .git MB, never packed | .git MB, packing | packs made |")
        print("|---:|---:|---:|---:|---:|")
        plain_s: list[float] = []
        packed_s: list[float] = []
        packs = 0
        rngs = {name: random.Random(2) for name in stores}
        for run in range(1, args.runs + 1):
            one_run(stores["never"], rngs["never"])
            tracker = stores["packing"]
            counter = Path(tracker.repo.git_dir, "cortexgraph-beads.loose")
            before = read_counter(counter)
            took = one_run(tracker, rngs["packing"])
            if read_counter(counter) < before:
                packs += 1
                packed_s.append(took)
            else:
                plain_s.append(took)
            if run % every == 0 or run == args.runs:
                sizes = [dir_bytes(Path(stores[n].repo.git_dir)) for n in ("never", "packing")]
                file_mb = _mb(tracker.path.stat().st_size)
                print(f"| {run} | {file_mb} | {_mb(sizes[0])} | {_mb(sizes[1])} | {packs} |")
        assert stores["never"].path.read_bytes() == stores["packing"].path.read_bytes()

        report = stores["never"].pack()
        check_s = _check_seconds(stores["packing"], Path(tmp) / "scratch.loose")
        print("\n| what | seconds |")
        print("|---|---:|")
        print(f"| the check after each commit (stat 4 objects, counter file) | {check_s:.6f} |")
        print(
            f"| a run's commit, no pack (median of {len(plain_s)}) | {statistics.median(plain_s):.3f} |"
        )
        for took in packed_s:
            print(f"| a run's commit that packed | {took:.3f} |")
        print(
            f"| `issues pack` of the never-packed copy ({_mb(report.bytes_before)} -> "
            f"{_mb(report.bytes_after)} MB) | {report.seconds:.3f} |"
        )


if __name__ == "__main__":
    main()
