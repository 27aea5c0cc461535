from __future__ import annotations

import numpy as np
import pytest
from agents_helpers import NOW, add
from fakes import BrokenEmbedder

from cortexgraph.agents.cluster_detector import ClusterAction, ClusterConfig, ClusterDetector
from cortexgraph.agents.common import LABEL_CLUSTER
from cortexgraph.agents.neighbours import radius_pairs
from cortexgraph.storage.errors import InvalidInputError


def _seed(store):
    dup = [
        add(store, "The ledger service uses PostgreSQL 16 for storage"),
        add(store, "the ledger service uses postgresql 16 for storage."),
        add(store, "The ledger service uses PostgreSQL 16 for storage!"),
    ]
    other = [
        add(store, "Alice prefers tea over coffee in the morning"),
        add(store, "Deploys happen on Tuesdays after the standup"),
    ]
    return dup, other


def test_near_duplicates_cluster_and_unrelated_do_not(store, embedder):
    dup, other = _seed(store)
    report = ClusterDetector(store, embedder).run(now=NOW)
    assert report.method == "embeddings:hashing-test"
    assert len(report.clusters) == 1
    cluster = report.clusters[0]
    assert set(cluster.memory_ids) == {m.id for m in dup}
    assert cluster.cohesion == pytest.approx(1.0, abs=1e-5)
    assert cluster.action is ClusterAction.MERGE
    assert not {m.id for m in other} & set(cluster.memory_ids)


def test_action_thresholds(store):
    agent = ClusterDetector(store, config=ClusterConfig(merge_cohesion=0.85, review_cohesion=0.65))
    assert agent.action_for(0.85) is ClusterAction.MERGE
    assert agent.action_for(0.8499) is ClusterAction.REVIEW
    assert agent.action_for(0.65) is ClusterAction.REVIEW
    assert agent.action_for(0.6499) is ClusterAction.KEEP
    with pytest.raises(InvalidInputError):
        ClusterConfig(merge_cohesion=0.5, review_cohesion=0.6)
    with pytest.raises(InvalidInputError):
        ClusterConfig(max_cluster_size=1)


def test_review_and_keep_clusters_from_link_threshold(store, embedder):
    # Share 3 of 4 words: cosine 0.75 -> review at link 0.7; keep when review needs 0.8.
    a = add(store, "alpha beta gamma delta")
    b = add(store, "alpha beta gamma epsilon")
    cfg = ClusterConfig(link_threshold=0.7, merge_cohesion=0.85, review_cohesion=0.65)
    (c,) = ClusterDetector(store, embedder, config=cfg).run(now=NOW).clusters
    assert set(c.memory_ids) == {a.id, b.id} and c.action is ClusterAction.REVIEW
    cfg = ClusterConfig(link_threshold=0.7, review_cohesion=0.8, merge_cohesion=0.9)
    (c,) = ClusterDetector(store, embedder, config=cfg).run(now=NOW).clusters
    assert c.action is ClusterAction.KEEP


def test_max_cluster_size_caps_groups(store, embedder):
    for i in range(7):
        add(store, f"same words here {'!' * i}")
    report = ClusterDetector(store, embedder, config=ClusterConfig(max_cluster_size=3)).run(now=NOW)
    assert all(c.size <= 3 for c in report.clusters)
    assert sum(c.size for c in report.clusters) >= 6  # 3 + 3 (+ a leftover single is no cluster)


@pytest.mark.parametrize("emb", [None, BrokenEmbedder()])
def test_tfidf_fallback_is_labelled(store, emb):
    dup, _ = _seed(store)
    report = ClusterDetector(store, emb).run(now=NOW)
    assert report.method == "tfidf"
    assert len(report.clusters) == 1
    assert set(report.clusters[0].memory_ids) == {m.id for m in dup}


def test_issues_opened_for_merge_and_review_only(store, tracker, embedder):
    dup, _ = _seed(store)
    add(store, "alpha beta gamma delta")
    add(store, "alpha beta gamma epsilon")
    cfg = ClusterConfig(link_threshold=0.7, merge_cohesion=0.85, review_cohesion=0.65)
    report = ClusterDetector(store, embedder, tracker, cfg).run(now=NOW)
    issues = tracker.query(labels=[LABEL_CLUSTER])
    assert report.issues_opened == 2 == len(issues)
    merge = tracker.query(labels=[LABEL_CLUSTER, "action:merge"])
    assert len(merge) == 1 and set(merge[0].metadata["memory_ids"]) == {m.id for m in dup}
    assert len(tracker.query(labels=[LABEL_CLUSTER, "action:review"])) == 1
    ClusterDetector(store, embedder, tracker, cfg).run(now=NOW)
    assert len(tracker.query(labels=[LABEL_CLUSTER])) == 2  # deduped by cluster id


def test_dry_run_opens_no_issues(store, tracker, embedder):
    _seed(store)
    report = ClusterDetector(store, embedder, tracker).run(now=NOW, dry_run=True)
    assert len(report.clusters) == 1 and tracker.query() == []


def _clustered_vectors(n_groups=400, per_group=3, noise=0.03, singles=8000, dim=64, seed=1):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(n_groups, dim))
    rows = [c + noise * rng.normal(size=(per_group, dim)) for c in centers]
    rows.append(rng.normal(size=(singles, dim)))
    x = np.vstack(rows).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_ivf_neighbour_search_matches_exact_and_compares_far_fewer_pairs():
    x = _clustered_vectors()
    exact = radius_pairs(x, 0.9, exact_limit=10**9)
    ivf = radius_pairs(x, 0.9, exact_limit=100, cell_size=100)
    assert exact.method == "exact" and ivf.method.startswith("ivf")
    truth = set(zip(exact.i.tolist(), exact.j.tolist(), strict=True))
    found = set(zip(ivf.i.tolist(), ivf.j.tolist(), strict=True))
    assert len(truth) >= 1200
    assert found <= truth  # every reported pair really is above the threshold
    assert len(found & truth) / len(truth) >= 0.98
    assert ivf.compared < exact.compared / 5
    np.testing.assert_allclose(
        np.sort(ivf.sim),
        np.sort(exact.sim[np.isin(exact.i * len(x) + exact.j, ivf.i * len(x) + ivf.j)]),
        rtol=1e-5,
    )


def test_max_per_row_keeps_each_rows_strongest_pairs_exact_and_ivf():
    from cortexgraph.agents.cluster_grouping import strongest_per_row

    x = _clustered_vectors(n_groups=60, per_group=8, noise=0.3, singles=300)
    full = radius_pairs(x, 0.5, exact_limit=10**9)
    want = set(
        zip(*(a.tolist() for a in strongest_per_row(full.i, full.j, full.sim, 4)[:2]), strict=True)
    )
    exact = radius_pairs(x, 0.5, exact_limit=10**9, max_per_row=4)
    assert set(zip(exact.i.tolist(), exact.j.tolist(), strict=True)) == want
    assert len(want) < 0.8 * len(full)  # the cap did drop pairs
    ivf = radius_pairs(x, 0.5, exact_limit=100, cell_size=100, max_per_row=4)
    uncapped = radius_pairs(x, 0.5, exact_limit=100, cell_size=100)
    assert len(ivf) < len(uncapped)  # each cell kept only its rows' strongest pairs
    found = set(zip(ivf.i.tolist(), ivf.j.tolist(), strict=True))
    assert found <= set(zip(full.i.tolist(), full.j.tolist(), strict=True))
    kept = strongest_per_row(ivf.i, ivf.j, ivf.sim, 4)
    assert len(set(zip(kept[0].tolist(), kept[1].tolist(), strict=True)) & want) >= 0.9 * len(want)


def test_the_ivf_partition_sums_its_cells_without_a_sorted_copy_of_the_sample():
    """k-means sums each cell's rows; at 10k memories the sample is every row, so a sorted copy
    of it was a whole matrix more at the consolidation run's peak."""
    import tracemalloc

    from cortexgraph.agents.neighbours import _cell_sums

    rng = np.random.default_rng(0)
    sample = rng.standard_normal((4000, 384)).astype(np.float32)
    assign = rng.integers(0, 27, size=len(sample))
    expected = np.zeros((27, 384), dtype=np.float32)
    np.add.at(expected, assign, sample)  # the reference the cell sums must equal bit for bit
    tracemalloc.start()
    try:
        sums = _cell_sums(sample, np.arange(len(sample)), assign, 27)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.array_equal(sums, expected)
    assert peak < sample.nbytes / 4, (peak, sample.nbytes)


def test_the_ivf_k_means_reads_its_sample_from_the_matrix_without_copying_it():
    """The sample is row numbers: its rows were a 15 MB copy at 10k memories. The centroids
    are those of the copied sample, bit for bit."""
    import tracemalloc

    from cortexgraph.agents.neighbours import _kmeans_centroids

    x = np.random.default_rng(1).standard_normal((12000, 384)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    rng = np.random.default_rng(5)  # the reference: the sample copied, then k-means on it
    sample = x[rng.choice(len(x), size=10_000, replace=False)]
    want = sample[rng.choice(len(sample), size=80, replace=False)].copy()
    for _ in range(8):
        assign = np.argmax(sample @ want.T, axis=1)
        sums = np.zeros_like(want)
        np.add.at(sums, assign, sample)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        empty = norms[:, 0] == 0
        sums[~empty] /= norms[~empty]
        sums[empty] = want[empty]
        want = sums
    tracemalloc.start()
    try:
        got = _kmeans_centroids(x, 80, seed=5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.array_equal(got, want)
    assert peak < x.nbytes / 4, (peak, x.nbytes)


@pytest.mark.parametrize("exact_limit", [6000, 10])  # the exact search, then the IVF one
def test_through_an_embedding_cache_the_detector_reads_the_cache_s_vectors_and_the_same_pairs(
    store, embedder, exact_limit
):
    """An EmbeddingCache holds each text's vector: the detector finds pairs on those very
    arrays, normalised as they are read (no stacked copy of them), and decides as through
    the sorted batches."""
    from cortexgraph.storage.embedding_cache import EmbeddingCache, text_key

    dup, _ = _seed(store)
    for k in range(40):
        add(store, f"note {k} on the ledger service and its PostgreSQL {k % 7} storage")
    cache = EmbeddingCache(embedder)
    config = ClusterConfig(exact_limit=exact_limit)
    detector = ClusterDetector(store, cache, config=config)
    texts = detector._guard(sorted(store.list(), key=lambda m: m.id)).claims()
    _, finder, _, _ = detector._candidates(texts, None)
    assert finder.held is not None
    held = cache._vectors
    assert all(
        row is held[text_key(t)] for row, t in zip(finder.held.rows, texts, strict=True)
    )  # the cache's own arrays, not a copy of them
    sorted_batches = ClusterDetector(store, embedder, config=config).run(now=NOW)
    report = detector.run(now=NOW)
    assert [c.memory_ids for c in report.clusters] == [
        c.memory_ids for c in sorted_batches.clusters
    ]
    assert any({m.id for m in dup} <= set(c.memory_ids) for c in report.clusters)
    assert report.candidate_pairs == sorted_batches.candidate_pairs
    assert report.neighbour_method == sorted_batches.neighbour_method


@pytest.mark.parametrize("exact_limit", [6000, 10])  # the exact search, then the IVF one
def test_through_an_embedding_cache_no_pair_that_cannot_pass_is_judged(
    store, embedder, exact_limit, monkeypatch
):
    """A cache's vectors are each text's own: a pair found below the lower of the link and
    relate bars (less rounding) can never pass its check on its own vectors, so it is neither
    found nor judged; the report is the one the sorted batches give (found at the batch
    margin below the bars, each checked on its own vector), bit for bit."""
    from cortexgraph.agents.link_guards import LinkGuard
    from cortexgraph.agents.vectors import HELD_ROUNDING
    from cortexgraph.storage.embedding_cache import EmbeddingCache

    _seed(store)
    for k in range(60):
        add(store, f"note {k} on the ledger service, its {k % 5} replicas and PostgreSQL {k % 7}")
        add(store, f"the ledger {k % 9} service keeps backups for {k % 4} weeks in storage")
    judged: list[float] = []
    reasons = LinkGuard.reasons

    def spy(guard, i, j):  # the cosine of each pair judged, on the texts' vectors
        vecs = embedder.embed(guard.claims())
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        judged.extend(np.einsum("ij,ij->i", vecs[i], vecs[j]).tolist())
        return reasons(guard, i, j)

    monkeypatch.setattr(LinkGuard, "reasons", spy)
    config = ClusterConfig(exact_limit=exact_limit)
    sorted_batches = ClusterDetector(store, embedder, config=config).run(now=NOW, dry_run=True)
    passing = min(config.link_threshold, config.merge_cohesion)  # relate: the merge bar
    assert min(judged) < passing - HELD_ROUNDING  # the margin finds pairs below the bars
    judged.clear()
    report = ClusterDetector(store, EmbeddingCache(embedder), config=config).run(
        now=NOW, dry_run=True
    )
    assert judged and min(judged) >= passing - HELD_ROUNDING
    assert report == sorted_batches
    assert report.clusters and report.refused_conflicts


def test_through_an_embedding_cache_each_text_is_asked_for_once(store, embedder):
    """The check on each text's own vector reads the vector the cache holds (what its embed
    answers) instead of asking the cache again for one text at a time."""
    from cortexgraph.storage.embedding_cache import EmbeddingCache

    dup, _ = _seed(store)
    for k in range(30):
        add(store, f"note {k} on the ledger service and its PostgreSQL {k % 7} storage")
    cache = EmbeddingCache(embedder)
    cache.held([m.content for m in store.list()])  # all held, as after a run's warm-up
    asked = cache.hits
    report = ClusterDetector(store, cache).run(now=NOW, dry_run=True)
    assert any({m.id for m in dup} <= set(c.memory_ids) for c in report.clusters)
    assert cache.hits - asked == len(store.list())  # every claim once, in one ask
    assert report == ClusterDetector(store, embedder).run(now=NOW, dry_run=True)


@pytest.mark.parametrize(("n", "exact_limit"), [(3000, 6000), (9000, 6000)])
def test_held_rows_give_the_pairs_of_the_normalised_matrix_bit_for_bit(n, exact_limit):
    """Rows normalised as they are read (agents.held_rows) against the stacked matrix
    normalised in blocks: the same pairs and similarities, by
    the exact search and by the IVF one, from rows that are not quite unit length."""
    from cortexgraph.agents.held_rows import NORM_BLOCK, HeldRows, row_norms

    rng = np.random.default_rng(3)
    centres = rng.standard_normal((n // 20, 48)).astype(np.float32)
    raw = centres[rng.integers(0, len(centres), n)] + 0.3 * rng.standard_normal((n, 48))
    raw = (raw * rng.uniform(0.97, 1.03, (n, 1))).astype(np.float32)
    rows = list(raw)  # views of one array, as a cache read from its file holds them
    matrix = np.stack(rows)
    for start in range(0, n, NORM_BLOCK):
        block = matrix[start : start + NORM_BLOCK]
        np.divide(block, row_norms(block), out=block)
    held = HeldRows(rows)
    assert np.array_equal(held[np.arange(n)], matrix)
    whole = HeldRows(rows)  # every row read first: the norms come from that one stack
    assert np.array_equal(whole[:], matrix)
    assert np.array_equal(whole[np.arange(n)[::-7]], matrix[::-7])
    assert all(np.shares_memory(r, raw) for r in held.rows[:5])
    for per_row in (None, 8):
        want = radius_pairs(matrix, 0.6, exact_limit=exact_limit, max_per_row=per_row)
        got = radius_pairs(held, 0.6, exact_limit=exact_limit, max_per_row=per_row)
        assert len(want) > 0
        assert got.method == want.method
        assert got.compared == want.compared
        for a, b in ((got.i, want.i), (got.j, want.j), (got.sim, want.sim)):
            assert np.array_equal(a, b)


def test_stacked_rows_are_np_stack_s_and_refuse_ragged_rows():
    """agents.held_rows.stacked_rows: the float32 matrix ``np.stack`` makes of 1-D rows,
    views of one array or not, and a ValueError for rows it could not stack."""
    from cortexgraph.agents.held_rows import stacked_rows

    rng = np.random.default_rng(5)
    base = rng.standard_normal((7, 5)).astype(np.float32)
    rows = [*base[:4], base[4].copy(), base[5].astype(np.float64), base[6]]
    want = np.stack(rows).astype(np.float32)
    got = stacked_rows(rows)
    assert got.dtype == np.float32 and np.array_equal(got, want)
    for bad in ([base[0], base[1, :4]], [base[:2], base[2:4]], []):
        with pytest.raises(ValueError):
            stacked_rows(bad)
