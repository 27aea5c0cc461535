"""An embedding cache hashes a text once, however many of its steps a run asks about it."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from fakes import HashingEmbedder

from cortexgraph.storage import InMemoryStore, embedding_cache
from cortexgraph.storage.embedding_cache import EmbeddingCache
from cortexgraph.storage.matrix_dense_index import MatrixDenseIndex

NOW = 1_700_000_000
TEXTS = [f"a kayak trip on lake number {i}" for i in range(30)]


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each text went through the real ``text_key`` (a spy, not a stand-in)."""
    seen: Counter[str] = Counter()
    real = embedding_cache.text_key

    def counting(text: str) -> str:
        seen[text] += 1
        return real(text)

    monkeypatch.setattr(embedding_cache, "text_key", counting)
    return seen


def test_missing_held_and_embed_hash_each_text_once(tmp_path, hashed) -> None:
    model = HashingEmbedder(16)
    cache = EmbeddingCache(model, tmp_path)
    assert cache.missing(TEXTS) == TEXTS  # what a run's warm-up asks first
    rows = cache.held(TEXTS)  # the cluster step's vectors
    each = [cache.embed([t])[0] for t in reversed(TEXTS)]  # its text-by-text check
    assert hashed == Counter(TEXTS)
    # the answers are the model's, as before
    assert np.array_equal(np.stack(rows), model.embed(TEXTS))
    assert np.array_equal(np.stack(each[::-1]), np.stack(rows))
    cache.save()
    again = EmbeddingCache(HashingEmbedder(16), tmp_path)
    assert np.array_equal(again.embed(TEXTS), np.stack(rows))


def test_a_dense_index_sync_hashes_each_row_text_once(hashed) -> None:
    store = InMemoryStore()
    memories = [store.save(t, now=NOW) for t in TEXTS]
    dense = MatrixDenseIndex(EmbeddingCache(HashingEmbedder(16)))
    dense.sync(memories, embed_limit=len(memories))  # its keys, the cache's missing, embed
    assert len(dense) == len(TEXTS)
    assert sorted(hashed.values()) == [1] * len(TEXTS)


def test_texts_asked_about_beyond_the_vectors_held_are_forgotten(monkeypatch, hashed) -> None:
    """The memo of keys keeps no text alive for long that holds no vector (an edited one)."""
    monkeypatch.setattr(embedding_cache, "_KEYS_SPARE", 4)
    cache = EmbeddingCache(HashingEmbedder(16))
    cache.embed(TEXTS[:2])
    for text in TEXTS[2:]:  # asked about, never embedded
        cache.keys([text])
    cache.keys([TEXTS[2]])
    assert hashed[TEXTS[2]] == 2
