"""BM25 index: tokenisation, stemming, the context field, the change journal."""

from __future__ import annotations

import random

from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.text_index import TextIndex, tokenize

NOW = 1_700_000_000


def test_stemming_matches_inflections() -> None:
    assert tokenize("running runs") == ["run", "run"]
    assert tokenize("agencies") == tokenize("agency")
    assert tokenize("running", stem=False) == ["running"]
    assert tokenize("The cat and the dogs") == ["cat", "dog"]


def test_compounds_keep_whole_and_parts() -> None:
    toks = tokenize("node.js and c++ in 2023-05-08", stem=False)
    assert "node.js" in toks and "node" in toks and "js" in toks
    assert "c++" in toks
    assert "2023" in toks and "05" in toks


def test_stop_words_only_query_scores_nothing() -> None:
    index = TextIndex()
    index.add("a", "the quick brown fox")
    assert index.scores("the and of") == {}


def test_unique_word_ranks_first_among_1000_distractors() -> None:
    rng = random.Random(7)
    vocab = [f"word{i}" for i in range(300)]
    store = InMemoryStore()
    for _ in range(1000):
        store.save(" ".join(rng.choices(vocab, k=12)), now=NOW)
    target = store.save("notes about the zeppelin restoration project", now=NOW)
    results = store.search("zeppelin", top_k=5, now=NOW)
    assert results[0].memory.id == target.id
    assert len(results) == 1  # a query touches postings only: no unrelated memory comes back


def test_stemmed_query_finds_inflected_memory() -> None:
    store = InMemoryStore()
    hit = store.save("She was painting sunrises by the lake", now=NOW)
    store.save("Stock prices fell sharply", now=NOW)
    assert store.search("paint a sunrise", now=NOW)[0].memory.id == hit.id


def test_context_field_counts_but_less_than_content() -> None:
    index = TextIndex(context_weight=0.3)
    index.add("own", "we adopted a puppy named rex")
    index.add("neighbour", "yes, last spring!", context="we adopted a puppy named rex")
    scores = index.scores("puppy rex")
    assert scores["own"] > scores["neighbour"] > 0
    index.set_context("neighbour", None)
    assert "neighbour" not in index.scores("puppy rex")


def test_store_indexes_meta_context_for_search() -> None:
    store = InMemoryStore()
    short = store.save("Yes, in May!", context="When did you move to Lisbon?", now=NOW)
    store.save("Lisbon trams are yellow and old", now=NOW)
    ids = [r.memory.id for r in store.search("move to Lisbon", now=NOW)]
    assert short.id in ids


def test_context_follows_content_edits_and_deletes() -> None:
    store = InMemoryStore()
    m = store.save("short reply", context="talk about kayaks", now=NOW)
    assert store.search("kayaks", now=NOW)[0].memory.id == m.id
    store.update(m.id, content="another reply", context="talk about canoes")
    assert [r.memory.id for r in store.search("canoes", now=NOW)] == [m.id]
    assert store.search("kayaks", now=NOW) == []
    store.delete(m.id)
    assert store.search("canoes", now=NOW) == []


def test_journal_reports_changes_and_resync() -> None:
    index = TextIndex()
    v0 = index.version
    index.add("a", "alpha")
    index.add("b", "beta")
    index.remove("a")
    version, ids = index.changes_since(v0)
    assert ids == {"a", "b"} and version == index.version
    assert index.changes_since(version) == (version, set())
    assert index.changes_since(version + 5)[1] is None  # unknown future version: resync all
