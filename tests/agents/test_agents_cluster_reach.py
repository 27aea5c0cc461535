"""An incremental cluster run judges only the pairs its changed memories can reach
(agents.link_reach), and decides as if it had judged them all."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from agents_helpers import NOW, add

from cortexgraph.agents.cluster_detector import ClusterDetector
from cortexgraph.agents.cluster_grouping import strongest_per_row
from cortexgraph.agents.link_reach import Bars, pairwise, sift
from cortexgraph.agents.neighbours import NeighbourPairs


class _GramEmbedder:
    """Each text's vector from a chosen matrix of cosines (its Cholesky factor's rows)."""

    name = "gram-test"

    def __init__(self, texts: Sequence[str], gram: np.ndarray) -> None:
        factor = np.linalg.cholesky(gram).astype(np.float32)
        self.vectors = dict(zip(texts, factor, strict=True))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])


def _chain(length: int) -> tuple[list[str], np.ndarray]:
    """``length`` + 1 notes, each linked to the next only: the links grow stronger along the
    chain (0.70, 0.73, ...); every other pair is a candidate (0.6) below the link bar.
    Grouped strongest first, the far end's pairs take their members before the near end's
    weaker pairs are reached, so what the first note joins depends on the whole chain."""
    texts = [f"the chain's step {'abcdefgh'[k]}" for k in range(length + 1)]
    gram = np.full((length + 1, length + 1), 0.6)
    np.fill_diagonal(gram, 1.0)
    for k in range(length):
        gram[k, k + 1] = gram[k + 1, k] = 0.70 + 0.03 * k
    return texts, gram


def _clusters(report, ids):
    return sorted(
        (c.memory_ids, round(c.cohesion, 6), c.action)
        for c in report.clusters
        if set(c.memory_ids) & ids
    )


@pytest.mark.parametrize("length", [2, 3, 4, 5])
def test_a_chain_of_links_is_followed_to_its_end(store, length):
    texts, gram = _chain(length)
    memories = [add(store, t, age_days=1.0) for t in texts]
    add(store, "an unrelated note about lunch", age_days=1.0)
    embedder = _GramEmbedder([*texts, "an unrelated note about lunch"], _padded(gram))
    detector = ClusterDetector(store, embedder)
    full = detector.run(now=NOW, dry_run=True)
    for changed in (memories[0], memories[1]):
        scope = {changed.id}
        part = detector.run(now=NOW, dry_run=True, scope=scope)
        assert _clusters(part, scope) == _clusters(full, scope)
    # The chain decides: a run that judged only the changed memory's own pairs (or its
    # neighbours' too) would group the first two notes whatever lay beyond them.
    first = {memories[0].id, memories[1].id}
    alone = detector.run(now=NOW, dry_run=True, scope={memories[0].id})
    assert (first in [set(c.memory_ids) for c in alone.clusters]) == (length % 2 == 1)


def _padded(gram: np.ndarray) -> np.ndarray:
    """``gram`` and one more text unlike all of them."""
    n = len(gram)
    out = np.eye(n + 1) * 1.0
    out[:n, :n] = gram
    out[n, :n] = out[:n, n] = 0.05
    return out


def _random_pairs(rng, n: int, m: int) -> NeighbourPairs:
    i = rng.integers(0, n, m)
    j = rng.integers(0, n, m)
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    keys = np.unique((lo * n + hi)[lo != hi])
    # Ties on purpose: similarities on a coarse grid.
    sim = (rng.integers(0, 40, len(keys)) / 100 + 0.58).astype(np.float32)
    return NeighbourPairs(keys // n, keys % n, sim, "test", len(keys))


def _reasons(rng, n: int):
    """A fixed verdict per pair: most allowed, some refused, some restatements."""
    table = {}

    def reason(i: int, j: int) -> str | None:
        key = (min(i, j), max(i, j))
        if key not in table:
            table[key] = rng.choice([None, "numbers/names", "numbers/names", "speakers"])
        return table[key]

    return reason


def _reach(pairs: NeighbourPairs, verdicts, bars: Bars, seeds) -> set[int]:
    """The rows the seeds reach over the pairs that link or relate (from the whole sieve),
    their similarities read as the detector reads them (Python floats)."""
    edges: dict[int, set[int]] = {}
    ends = zip(pairs.i.tolist(), pairs.j.tolist(), pairs.sim.tolist(), verdicts, strict=True)
    for i, j, s, why in ends:
        joins = s >= bars.link if why is None else why == "speakers" and s >= bars.relate
        if joins:
            edges.setdefault(i, set()).add(j)
            edges.setdefault(j, set()).add(i)
    seen, todo = set(seeds), list(seeds)
    while todo:
        for other in edges.get(todo.pop(), ()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


@pytest.mark.parametrize("seed", range(12))
def test_the_reach_keeps_every_pair_touching_it_as_the_whole_sieve_does(seed):
    rng = np.random.default_rng(seed)
    n = 120
    found = _random_pairs(rng, n, 240)
    reason = _reasons(rng, n)
    bars = Bars(link=0.65, relate=0.75, margin=0.07, per_row=3)  # a small cap: caps decide
    whole = sift(found, n, pairwise(reason), found.sim.__getitem__, bars)
    assert whole.judged == len(found)
    # The whole sieve is the detector's: the verdicts' pairs at the bar, capped per row.
    verdicts = [reason(i, j) for i, j in zip(found.i.tolist(), found.j.tolist(), strict=True)]
    at_bar = [
        k
        for k, why in enumerate(verdicts)
        if found.sim[k] >= (0.65 if why is None else 0.68) and why in (None, "speakers")
    ]
    capped = strongest_per_row(found.i[at_bar], found.j[at_bar], found.sim[at_bar], 3)
    assert [a.tolist() for a in capped] == [
        whole.pairs.i.tolist(),
        whole.pairs.j.tolist(),
        whole.pairs.sim.tolist(),
    ]
    for seeds in (rng.choice(n, 1), rng.choice(n, 4, replace=False)):
        part = sift(found, n, pairwise(reason), found.sim.__getitem__, bars, np.asarray(seeds))
        reach = _reach(whole.pairs, whole.verdicts, bars, seeds.tolist())
        want = [
            (i, j, s, why)
            for i, j, s, why in zip(
                whole.pairs.i.tolist(),
                whole.pairs.j.tolist(),
                whole.pairs.sim.tolist(),
                whole.verdicts,
                strict=True,
            )
            if i in reach or j in reach
        ]
        got = list(
            zip(
                part.pairs.i.tolist(),
                part.pairs.j.tolist(),
                part.pairs.sim.tolist(),
                part.verdicts,
                strict=True,
            )
        )
        assert got == want
        if len(reach) < n // 2:  # the cut: pairs far from the reach were never judged
            assert part.judged < len(found)


def test_the_bars_compare_similarities_as_python_floats():
    """A float32 similarity that rounds to the bar is below it: the refusals counted at the
    link bar and the restated pairs kept near the relate bar are read as the detector reads
    its pairs (Python floats), not in float32."""
    at = np.float32(0.65)  # 0.64999998 as a Python float
    above = np.nextafter(at, np.float32(1.0))
    found = NeighbourPairs(
        np.array([0, 0, 1, 1]),
        np.array([1, 2, 2, 3]),
        np.array([at, above, np.float32(0.68), np.nextafter(np.float32(0.68), 0)]),
        "test",
        4,
    )
    verdicts = {(0, 1): "numbers/names", (0, 2): "numbers/names", (1, 2): "speakers"}
    verdicts[(1, 3)] = "speakers"

    def reason(i: int, j: int) -> str | None:
        return verdicts[(i, j)]

    bars = Bars(link=0.65, relate=0.75, margin=0.07, per_row=3)  # relate floor 0.68
    sifted = sift(found, 4, pairwise(reason), found.sim.__getitem__, bars)
    assert sifted.refused == {"numbers/names": 1, "speakers": 2}
    floor = bars.relate - bars.margin
    high, low = (float(s) for s in found.sim[2:])
    kept = [(1, 2)] if low < floor <= high else []
    assert kept, "the relate floor falls between the two restated pairs' float32 values"
    assert list(zip(sifted.pairs.i.tolist(), sifted.pairs.j.tolist(), strict=True)) == kept


def test_names_known_only_far_away_still_keep_swapped_facts_apart(store, embedder):
    """A text names what any memory of the store has as an entity: Redis and Kafka are known
    only from a memory far from the changed one, and still make these two different facts,
    in an incremental run as in a full one."""
    new = add(store, "we chose redis for the billing events queue this week", age_days=0.1)
    add(store, "we chose kafka for the billing events queue this week", age_days=1.0)
    add(store, "the cafeteria lunch menu changes on fridays", entities=["Redis", "Kafka"])
    for k in range(5):
        add(store, f"unrelated note {k} about gardening and tomatoes {k}", age_days=3.0)
    detector = ClusterDetector(store, embedder)
    full = detector.run(now=NOW, dry_run=True)
    part = detector.run(now=NOW, dry_run=True, scope={new.id})
    assert part.scanned == 2  # the far memory is outside the changed one's neighbourhood
    assert full.clusters == part.clusters == ()
    assert full.refused_by == part.refused_by == (("numbers/names", 1),)
