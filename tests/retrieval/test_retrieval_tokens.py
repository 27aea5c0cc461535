"""The token counter is MiniLM's real WordPiece vocabulary, without the model's 128 limit."""

from __future__ import annotations

from tokenizers import Tokenizer

from cortexgraph.retrieval.tokens import MINILM_NAME, TokenCounter, _approx, minilm_tokenizer_path

PROSE = [
    "We now use Postgres instead of MySQL for the billing database.",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "The FastAPI service moved to port 8081; health checks hit /healthz every 30s.",
    "Melanie: Sounds great! I'm painting a sunrise over the lake this weekend.",
]


def test_counter_is_the_minilm_vocabulary(counter):
    path = minilm_tokenizer_path()
    assert path is not None and path.name == "tokenizer.json"
    assert counter.name == MINILM_NAME and counter.exact
    raw = Tokenizer.from_file(str(path))
    raw.no_padding()
    raw.no_truncation()
    for text in PROSE:
        assert counter.count(text) == len(raw.encode(text, add_special_tokens=False).ids)
    assert counter.count("Postgres") == 3  # post ##gre ##s: a real vocabulary, not len/4


def test_no_padding_or_truncation_at_128(counter):
    long = " ".join(PROSE * 20)
    assert counter.count(long) > 128 * 3
    assert counter.count("hi") == 1
    assert counter.count("") == 0
    assert counter.count_many(["hi", PROSE[0]]) == [1, counter.count(PROSE[0])]


def test_counts_add_up_over_lines(counter):
    """Packing sums per-line costs; WordPiece ignores whitespace, so the block costs the sum."""
    assert counter.count("\n".join(PROSE)) == sum(counter.count(t) for t in PROSE)


def test_truncate_stays_within_the_limit(counter):
    text = " ".join(PROSE)
    for limit in (1, 2, 5, 17, 40):
        cut = counter.truncate(text, limit)
        assert counter.count(cut) <= limit
        assert cut == "" or cut.endswith("…")
    assert counter.truncate(PROSE[0], 1000) == PROSE[0]
    assert counter.count(counter.truncate(text, 17)) >= 14  # uses the room, not a char guess


def test_fallback_is_labelled_and_close_on_prose(counter):
    fallback = TokenCounter(None, "regex-approx")
    assert not fallback.exact
    real = sum(counter.count(t) for t in PROSE)
    approx = sum(_approx(t) for t in PROSE)
    assert abs(approx - real) / real < 0.15
    cut = fallback.truncate(" ".join(PROSE), 12)
    assert fallback.count(cut) <= 12 and cut.endswith("…")
