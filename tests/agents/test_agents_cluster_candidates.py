"""Candidate pairs from a cheap model, checked by the real one (agents.candidate_pairs)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from agents_helpers import NOW, add
from fakes import BrokenEmbedder, HashingEmbedder

from cortexgraph.agents.candidate_pairs import OwnVectors, embed_each, normalised_rows
from cortexgraph.agents.cluster_detector import ClusterDetector
from cortexgraph.storage.embedding_cache import EmbeddingCache


class _Constant:
    """A 'static model' that thinks every text is the same: every pair is a candidate."""

    name = "constant"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.ones((len(texts), 4), dtype=np.float32) / 2.0


class _Blind:
    """A 'static model' that thinks no two texts alike: no pair is a candidate."""

    name = "blind"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.eye(len(texts), dtype=np.float32)


def _seed(store):
    dup = [
        add(store, "The ledger service uses PostgreSQL 16 for storage"),
        add(store, "the ledger service uses postgresql 16 for storage."),
        add(store, "The ledger service uses PostgreSQL 16 for storage!"),
    ]
    add(store, "Alice prefers tea over coffee in the morning")
    add(store, "Deploys happen on Tuesdays after the standup")
    return dup


def _clusters(report):
    return [(c.memory_ids, round(c.cohesion, 6), c.action) for c in report.clusters]


def test_candidates_checked_by_the_embedder_give_the_same_clusters(store):
    _seed(store)
    alone = ClusterDetector(store, HashingEmbedder()).run(now=NOW, dry_run=True)
    minilm = HashingEmbedder()
    report = ClusterDetector(store, minilm, candidates=_Constant()).run(now=NOW, dry_run=True)
    assert _clusters(report) == _clusters(alone)
    assert report.method == "embeddings:hashing-test"  # every link is the embedder's cosine
    assert report.neighbour_method.startswith("candidates by constant")
    assert "checked by hashing-test" in report.neighbour_method


def test_only_texts_in_candidate_pairs_are_embedded(store):
    _seed(store)
    minilm = HashingEmbedder()
    report = ClusterDetector(store, minilm, candidates=_Blind()).run(now=NOW, dry_run=True)
    assert report.clusters == ()  # the cheap model's misses are the detector's misses
    assert minilm.texts == []  # and the embedder had nothing to check


def test_a_failing_candidate_model_falls_back_to_the_embedder_alone(store):
    dup = _seed(store)
    report = ClusterDetector(store, HashingEmbedder(), candidates=BrokenEmbedder()).run(
        now=NOW, dry_run=True
    )
    assert not report.neighbour_method.startswith("candidates")
    assert [set(c.memory_ids) for c in report.clusters] == [{m.id for m in dup}]


def test_candidates_are_not_used_without_an_embedder(store):
    _seed(store)
    report = ClusterDetector(store, None, candidates=_Constant()).run(now=NOW, dry_run=True)
    assert report.method == "tfidf"
    assert not report.neighbour_method.startswith("candidates")


def test_duplicate_pairs_go_through_the_candidates_too(store):
    dup = _seed(store)
    method, pairs = ClusterDetector(
        store, HashingEmbedder(), candidates=_Constant()
    ).duplicate_pairs(0.9)
    assert method == "embeddings:hashing-test"
    assert {frozenset((p.id1, p.id2)) for p in pairs} == {
        frozenset((a.id, b.id)) for a in dup for b in dup if a.id < b.id
    }
    assert all(p.similarity >= 0.9 for p in pairs)


def test_own_vectors_from_a_cache_are_one_ask_and_the_vectors_of_one_text_at_a_time():
    texts = [
        "the ledger uses PostgreSQL",
        "Alice prefers tea",
        "the ledger uses PostgreSQL",  # a text twice: embedded once
        "deploys happen on Tuesdays",
        "Alice prefers coffee",
    ]
    one_by_one = embed_each(texts, HashingEmbedder())  # a bare model: a call per text
    i, j = np.array([0, 1, 3]), np.array([1, 4, 2])
    need = [0, 1, 2, 3, 4]
    model = HashingEmbedder()
    own = OwnVectors(texts, EmbeddingCache(model))
    sims = own.similarity(i, j)
    assert model.calls == 1 and sorted(model.texts) == sorted(set(texts))
    assert np.array_equal(own.dense[need], one_by_one[need])
    assert np.array_equal(sims, np.einsum("ij,ij->i", one_by_one[i], one_by_one[j]))


@pytest.fixture(scope="module")
def static_model():
    from cortexgraph.storage.embeddings import model_path
    from cortexgraph.storage.static_embedder import static_embedder

    model = static_embedder(model_path())
    if model is None:
        pytest.skip("model2vec (the 'static' extra) or MiniLM not installed")
    model.load()  # distils once, offline, beside the ONNX export
    return model


def test_the_distilled_static_model_ranks_a_paraphrase_above_an_unrelated_text(static_model):
    vecs = static_model.embed(
        [
            "Sam decided to use PostgreSQL for the billing ledger.",
            "The billing ledger will run on PostgreSQL, Sam decided.",
            "Mei bought a new bicycle for the weekend trip.",
        ]
    )
    assert vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2


def test_vectors_normalised_together_are_each_normalised_alone_bit_for_bit():
    """A text's own vector decides its links: normalised with others (one stacked norm
    product), it is the very row it is alone, ``vec / float(np.linalg.norm(vec))``, and a
    zero vector stays zero."""
    rng = np.random.default_rng(5)
    vectors = [v * np.float32(3.3) for v in rng.normal(size=(300, 384)).astype(np.float32)]
    vectors[7] = np.zeros(384, dtype=np.float32)
    vectors.append(rng.normal(size=384))  # float64, as a bare model may answer
    alone = [np.asarray(v, dtype=np.float32) for v in vectors]
    alone = [v / float(np.linalg.norm(v)) if np.linalg.norm(v) > 0 else v for v in alone]
    together = normalised_rows(vectors)
    assert together.dtype == np.float32
    assert np.array_equal(together, np.vstack(alone))
    assert not together[7].any()
