"""An embedding cache hashes a text once, however many of its steps a run asks about it."""

from __future__ import annotations

from collections import Counter
from hashlib import blake2b

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


def test_a_texts_key_is_the_one_earlier_versions_wrote_in_any_thread() -> None:
    """The cache files on disk are keyed so: a key computed otherwise (text_key copies one
    prepared hasher) would re-embed every vector. Threads hash at once in the MCP server."""
    from concurrent.futures import ThreadPoolExecutor

    pinned = {
        "a kayak trip on lake number 0": "f1b528bb118a63e42f998b14a5817c24",
        "caf\u00e9": "9883c13e4279980fe3f262ea93047f84",
    }
    assert {t: embedding_cache.text_key(t) for t in pinned} == pinned
    texts = [f"{t} {i}" for i in range(2000) for t in ("x", "kayak \u00e9")]
    with ThreadPoolExecutor(4) as pool:
        keys = list(pool.map(embedding_cache.text_key, texts, chunksize=50))
    assert keys == [blake2b(t.encode("utf-8"), digest_size=16).hexdigest() for t in texts]
