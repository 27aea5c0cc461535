"""What the vectors compare: the question less the names the entity index matches, and a line's
own words as well as the text ranked beside it."""

from __future__ import annotations

from fakes import HashingEmbedder

from cortexgraph.storage import InMemoryStore, StoreConfig
from cortexgraph.storage.embeddings import EmbeddingCache, MatrixDenseIndex
from cortexgraph.storage.search import SearchRequest, SearchTuning, run_search

NOW = 1_700_000_000
# The fake model knows that pottery is a hobby, as a real one would; BM25 does not.
MODEL = {"potteri": "hobbi"}


def dense_store(embedder: HashingEmbedder) -> InMemoryStore:
    return InMemoryStore(StoreConfig(), dense=MatrixDenseIndex(EmbeddingCache(embedder)))


def test_a_named_person_is_matched_by_entity_not_by_the_vector() -> None:
    # Both lines are hers. The short thank-you shares only her name with the question; the
    # long line answers it. With the name in the question's vector the thank-you won.
    store = dense_store(HashingEmbedder(synonyms=MODEL))
    thanks = store.save("Melanie: Thanks, Caroline!", entities=["melanie"], now=NOW)
    answer = store.save(
        "Melanie: I signed up for a pottery class, the teacher is kind and the studio is warm "
        "and bright with big windows",
        entities=["melanie"],
        now=NOW,
    )
    ids = [r.memory.id for r in store.search("What hobby does Melanie have?", now=NOW)]
    assert ids[:2] == [answer.id, thanks.id]


def test_names_stay_in_the_vector_when_no_entity_boost_matches_them() -> None:
    embedder = HashingEmbedder()
    store = dense_store(embedder)
    store.save("Melanie: hello", entities=["melanie"], now=NOW)
    store.search("melanie hobby", now=NOW)
    unboosted = SearchRequest(now=NOW, query="melanie hobby", tuning=SearchTuning(entity_boost=0))
    run_search(store, unboosted)
    store.search("melanie", now=NOW)  # only a name: the whole question is compared
    assert embedder.texts[-3:] == ["hobby", "melanie hobby", "melanie"]


def test_a_line_is_compared_by_its_own_words_too() -> None:
    # The answer was saved right after a long message about a book: its vector (content with
    # that neighbour text) is mostly about the book, and a line that only mentions a hobby
    # outranked it.
    store = dense_store(HashingEmbedder(synonyms={"swim": "hobbi"}))
    other = store.save(
        "a new hobby would help after a busy week at the office with the numbers", now=NOW
    )
    answer = store.save(
        "off swimming!",
        neighbour="finished the novel about the lighthouse keeper and the storm at sea, "
        "the ending made me cry, such a moving book, I lent it to my sister",
        now=NOW,
    )
    ids = [r.memory.id for r in store.search("what hobby", now=NOW)]
    assert ids == [answer.id, other.id]


def test_own_words_embed_at_most_the_limit_and_leave_the_rest_out() -> None:
    embedder = HashingEmbedder()
    index = MatrixDenseIndex(EmbeddingCache(embedder))
    store = InMemoryStore(StoreConfig(), dense=index)
    first = store.save("swimming on sunday", neighbour="a long talk about books", now=NOW)
    second = store.save("pottery on monday", neighbour="a long talk about films", now=NOW)
    assert index.own_texts([first, second]) == [first.content, second.content]
    got = index.content_scores("swimming", [first, second], embed_limit=1)
    assert list(got) == [first.id]
    assert embedder.texts[-1] == first.content
    assert set(index.content_scores("swimming", [first, second])) == {first.id, second.id}
