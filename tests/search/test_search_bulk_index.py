"""The bulk-built index (opening a store) scores exactly like one built a document at a time."""

from __future__ import annotations

import math
import random

import pytest

from cortexgraph.storage import InMemoryStore, JSONLStore
from cortexgraph.storage.text_index import TextIndex

NOW = 1_700_000_000
VOCAB = [f"w{i}" for i in range(50)] + ["the", "and", "node.js", "running", "runs", "c++"]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(VOCAB, k=rng.randint(0, 12)))


def _same_scores(a: TextIndex, b: TextIndex, query: str) -> None:
    sa, sb = a.scores(query), b.scores(query)
    assert sa.keys() == sb.keys(), query
    for doc_id, score in sa.items():
        assert math.isclose(score, sb[doc_id], rel_tol=1e-5), (query, doc_id)


@pytest.mark.parametrize("seed", range(8))
def test_bulk_index_then_edits_score_like_one_at_a_time(seed: int) -> None:
    rng = random.Random(seed)
    docs = [(f"d{i}", _text(rng), _text(rng) if rng.random() < 0.4 else None) for i in range(150)]
    docs.append(("d3", "a repeated id replaces the first", None))
    bulk, single = TextIndex(), TextIndex()
    bulk.add_many(docs)
    for doc in docs:
        single.add(*doc)
    assert len(bulk) == len(single) == 150
    for _ in range(250):
        doc_id, roll = f"d{rng.randrange(180)}", rng.random()
        if roll < 0.4:
            text, context = _text(rng), _text(rng) if rng.random() < 0.5 else None
            bulk.add(doc_id, text, context)
            single.add(doc_id, text, context)
        elif roll < 0.6:
            bulk.remove(doc_id)
            single.remove(doc_id)
        elif roll < 0.8:
            context = _text(rng) if rng.random() < 0.6 else None
            bulk.set_context(doc_id, context)
            single.set_context(doc_id, context)
        _same_scores(bulk, single, " ".join(rng.choices(VOCAB, k=3)))
        assert math.isclose(bulk.idf("w1"), single.idf("w1"))
    assert bulk.size_estimate() == single.size_estimate()


def test_context_weight_zero_ignores_the_context_field() -> None:
    index = TextIndex()
    index.add_many([("a", "plain words", "kayak trip"), ("b", "kayak rental", None)])
    assert set(index.scores("kayak")) == {"a", "b"}
    assert set(index.top("kayak", 5, context_weight=0.0)) == {"b"}


def test_reopened_store_finds_memory_by_context_on_first_search(tmp_path) -> None:
    store = JSONLStore(tmp_path / "stm")
    short = store.save("Yes, in May!", context="When did you move to Lisbon?", now=NOW)
    store.save("Lisbon trams are yellow", now=NOW)
    reopened = JSONLStore(tmp_path / "stm")
    assert short.id in [r.memory.id for r in reopened.search("move", now=NOW)]
    copy = InMemoryStore.copy_of(reopened)
    assert [r.memory.id for r in copy.search("move", now=NOW)] == [short.id]


def test_update_of_a_bulk_loaded_memory_replaces_its_postings(tmp_path) -> None:
    store = JSONLStore(tmp_path / "stm")
    m = store.save("kayaks on the river", now=NOW)
    store.save("canoes in the lake", now=NOW)
    reopened = JSONLStore(tmp_path / "stm")  # m is now in the bulk-built segment
    reopened.update(m.id, content="bicycles in the city")
    assert reopened.search("kayaks", now=NOW) == []
    assert [r.memory.id for r in reopened.search("bicycles", now=NOW)] == [m.id]
    reopened.delete(m.id)
    assert reopened.search("bicycles", now=NOW) == []


def test_tokenizer_import_stays_free_of_numpy() -> None:
    import subprocess
    import sys

    code = "import sys, storage.text_index as t; t.tokenize('x'); print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
