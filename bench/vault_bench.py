"""Vault benchmark: LTM index of a 10k-note vault (cold, unchanged, one note changed) and
unified STM+LTM search latency. Targets: unchanged re-index < 1 s, search p50 < 20 ms.

    OMP_NUM_THREADS=1 python bench/vault_bench.py [--notes 10000] [--memories 2000]

Baselines measured in the same run: obsidiantools' own Vault(...).connect().gather() on a
1,000-note sample (it has no incremental mode), and STM-only ``store.search``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import LTMIndex, search_unified

WORDS = (
    "ledger postgres kafka webhook invoice deploy cache latency retry schema index vault memory "
    "garden coffee espresso budget travel flight hotel meeting design review incident outage "
    "backup restore token auth session queue stream batch python rust typescript docker cluster"
).split()


# A Zipf-like vocabulary (real prose: few common words, a long tail), so BM25 postings have
# realistic lengths; the named words above are the most frequent.
VOCAB = WORDS + [f"w{i}" for i in range(20_000)]
ZIPF = [1.0 / (rank + 1) for rank in range(len(VOCAB))]


def prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(VOCAB, weights=ZIPF, k=n))


def make_vault(root: Path, n: int, rng: random.Random) -> None:
    for i in range(n):
        folder = root / f"area{i % 20}" / f"sub{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        words = prose(rng, rng.randint(80, 300))
        links = " ".join(f"[[note {rng.randrange(n)}]]" for _ in range(3))
        fm = f"---\ntitle: note {i}\ncreated: 2024-0{1 + i % 9}-1{i % 10}\ntags: [t{i % 30}]\n---\n"
        (folder / f"note {i}.md").write_text(f"{fm}# note {i}\n\n{words}\n\n{links} #x/y{i % 5}\n")


def timed(fn) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--memories", type=int, default=2_000)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    rng = random.Random(7)
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        make_vault(vault, args.notes, rng)

        cold, report = timed(lambda: LTMIndex(vault).refresh())
        unchanged, rep2 = timed(lambda: LTMIndex.open(vault, refresh=False).refresh())
        loaded = LTMIndex.open(vault, refresh=False)
        loaded.refresh()
        one = next(vault.rglob("*.md"))
        one.write_text(one.read_text() + "\nedited\n")
        changed, rep3 = timed(loaded.refresh)
        bm25_build, _ = timed(loaded.text_index)

        sample = Path(tmp) / "sample"
        make_vault(sample, min(1_000, args.notes), random.Random(7))
        from obsidiantools.api import Vault

        ot_time, _ = timed(lambda: Vault(sample).connect().gather())
        ours_sample, _ = timed(lambda: LTMIndex(sample).refresh())

        store = InMemoryStore()
        now = time.time()
        for _ in range(args.memories):
            words = prose(rng, rng.randint(5, 30))
            store.save(words, tags=[rng.choice(WORDS)], now=now - rng.randrange(30 * 86400))
        # Two-word queries: one common word and one from the tail, as people type them.
        queries = [f"{rng.choice(WORDS)} {rng.choice(VOCAB[:2000])}" for _ in range(args.queries)]
        search_unified(store, loaded, queries[0], now=now)  # warm
        uni, stm = [], []
        for q in queries:
            uni.append(timed(lambda q=q: search_unified(store, loaded, q, now=now))[0])
            stm.append(timed(lambda q=q: store.search(q, top_k=10, now=now))[0])

    def ms(x: float) -> str:
        return f"{x * 1000:.1f} ms"

    t = Table(title=f"LTM index, {args.notes} notes ({report.reparsed} parsed cold)")
    t.add_column("operation")
    t.add_column("time", justify="right")
    t.add_column("target / baseline", justify="right")
    t.add_row("cold build", f"{cold:.2f} s", "-")
    t.add_row(
        f"re-index unchanged (load + stat, {rep2.reparsed} re-read)",
        f"{unchanged:.3f} s",
        f"< 1 s: {'PASS' if unchanged < 1 else 'FAIL'}",
    )
    t.add_row(f"re-index, 1 note changed ({rep3.reparsed} re-read)", f"{changed:.3f} s", "-")
    t.add_row("BM25 build over all notes", f"{bm25_build:.2f} s", "-")
    n_sample = min(1_000, args.notes)
    t.add_row(
        f"obsidiantools connect+gather, {n_sample} notes",
        f"{ot_time:.2f} s",
        f"ours on the same: {ours_sample:.2f} s ({ot_time / ours_sample:.0f}x faster)",
    )
    console.print(t)

    s = Table(
        title=f"search, {args.memories} memories + {args.notes} notes, {args.queries} queries"
    )
    s.add_column("search")
    s.add_column("p50", justify="right")
    s.add_column("p95", justify="right")
    s.add_column("vs STM only", justify="right")
    p50u, p50s = statistics.median(uni), statistics.median(stm)
    p95 = lambda xs: sorted(xs)[int(0.95 * len(xs)) - 1]  # noqa: E731
    s.add_row("STM only (store.search)", ms(p50s), ms(p95(stm)), "1.0x")
    s.add_row(
        f"unified STM+LTM (target p50 < 20 ms: {'PASS' if p50u < 0.02 else 'FAIL'})",
        ms(p50u),
        ms(p95(uni)),
        f"{p50u / p50s:.1f}x",
    )
    console.print(s)


if __name__ == "__main__":
    main()
