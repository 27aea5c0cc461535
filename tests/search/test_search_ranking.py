"""Fusion, fallback without a model, decay re-ranking, spaced-repetition blending."""

from __future__ import annotations

import pytest

from cortexgraph.storage import InMemoryStore, StoreConfig
from cortexgraph.storage.decay import DAY, memory_score
from cortexgraph.storage.embeddings import (
    EmbeddingCache,
    EmbeddingUnavailableError,
    MatrixDenseIndex,
)

NOW = 1_700_000_000


def dense_store(embedder, **config) -> InMemoryStore:
    return InMemoryStore(StoreConfig(**config), dense=MatrixDenseIndex(EmbeddingCache(embedder)))


def test_fusion_finds_what_bm25_cannot(embedder) -> None:
    store = dense_store(embedder)
    synonym = store.save("automobile repair shop downtown", now=NOW)
    store.save("quarterly revenue grew", now=NOW)
    assert store.search("car", now=NOW, use_embeddings=False) == []
    results = store.search("car", now=NOW)
    assert results[0].memory.id == synonym.id
    assert 0 < results[0].similarity <= 1.0


def test_match_on_both_signals_beats_lexical_only(embedder) -> None:
    store = dense_store(embedder)
    both = store.save("car car car insurance", now=NOW)
    lexical = store.save("insurance forms", now=NOW)
    ids = [r.memory.id for r in store.search("car insurance", now=NOW)]
    assert ids == [both.id, lexical.id]


def test_model_absent_falls_back_to_bm25(broken_embedder, caplog) -> None:
    store = dense_store(broken_embedder)
    m = store.save("the ledger uses postgres", now=NOW)
    with caplog.at_level("WARNING"):
        results = store.search("ledger", now=NOW)  # default: embeddings when available
    assert [r.memory.id for r in results] == [m.id]
    assert "BM25 only" in caplog.text
    with pytest.raises(EmbeddingUnavailableError):
        store.search("ledger", now=NOW, use_embeddings=True)  # asked for: say it cannot


def test_use_embeddings_false_never_embeds(embedder) -> None:
    store = dense_store(embedder)
    store.save("alpha beta", now=NOW)
    store.search("alpha", now=NOW, use_embeddings=False)
    assert embedder.calls == 0


def test_decay_reranks_but_never_excludes_a_relevant_memory() -> None:
    store = InMemoryStore()
    old = store.save("the octopus escaped from the aquarium", now=NOW - 200 * DAY)
    fresh = store.save("the octopus ate a crab", now=NOW)
    assert memory_score(old, NOW, store.config.decay) < 0.05  # far below forget threshold
    ids = [r.memory.id for r in store.search("octopus", now=NOW)]
    assert set(ids) == {old.id, fresh.id}
    # A clearly better match still wins even though it has decayed.
    top = store.search("octopus escaped aquarium", now=NOW)[0]
    assert top.memory.id == old.id


def test_decay_breaks_near_ties_in_favour_of_fresh_memories() -> None:
    store = InMemoryStore()
    old = store.save("notes on the pelican survey", now=NOW - 60 * DAY)
    fresh = store.save("notes on the pelican survey!", now=NOW)
    ids = [r.memory.id for r in store.search("pelican survey", now=NOW)]
    assert ids == [fresh.id, old.id]


def test_spaced_repetition_never_outranks_a_clearly_better_match() -> None:
    config = StoreConfig(review_blend_ratio=0.5)
    store = InMemoryStore(config)
    # Danger-zone memory (decay between 0.15 and 0.35) that matches weakly.
    fading = store.save("a passing mention of the lighthouse", now=NOW - 12 * DAY)
    score = memory_score(fading, NOW, config.decay)
    assert config.decay.danger_zone_min <= score <= config.decay.danger_zone_max
    strong = [
        store.save(f"lighthouse keeper lighthouse log lighthouse lamp {i}", now=NOW)
        for i in range(6)
    ]
    results = store.search("lighthouse keeper lamp", top_k=4, now=NOW)
    assert all(r.memory.id in {m.id for m in strong} for r in results)
    assert not any(r.from_review for r in results)


def test_spaced_repetition_may_take_a_tail_slot_from_a_close_match() -> None:
    config = StoreConfig(review_blend_ratio=0.5)
    store = InMemoryStore(config)
    fading = store.save("heron nest by the river", now=NOW - 12 * DAY)
    fresh = [store.save(f"heron nest by the river {i}", now=NOW) for i in range(4)]
    results = store.search("heron nest river", top_k=2, now=NOW)
    assert results[0].memory.id in {m.id for m in fresh}  # head stays the best match
    assert results[-1].memory.id == fading.id and results[-1].from_review


def test_entity_named_in_query_boosts_its_memories() -> None:
    store = InMemoryStore()
    mel = store.save("I went hiking on the weekend", entities=["Melanie"], now=NOW)
    other = store.save("We went hiking on the weekend", entities=["Caroline"], now=NOW)
    ids = [r.memory.id for r in store.search("When did Melanie go hiking?", now=NOW)]
    assert ids[0] == mel.id and other.id in ids
