"""The block tokeniser (every document lowered and split in one string per block) gives the
term ids, lengths and vocabulary of splitting each document alone, on awkward text too."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cortexgraph.storage.bulk_terms as bulk_terms
from cortexgraph.storage.bulk_terms import block_term_ids, doc_term_ids, one_by_one_term_ids
from cortexgraph.storage.terms import tokenize

AWKWARD = [
    "node.js", "C++", "O'Neil's", "may-2023", "3.14", "#tag", "x_y", "a-b-", "ΟΔΟΣ", "ΣΑΣ Σ",
    "straße", "İstanbul", "ﬁle", "東京タワー", "x²", "½", "the", "and", "running", "RUNS",
    "\u00a0", "\u2028", "\x1c", "\x85", "e\u0301", "'s", "...", "-", "",
]  # fmt: skip
text = st.lists(st.one_of(st.sampled_from(AWKWARD), st.text(max_size=12)), max_size=12).map(
    lambda parts: " ".join(parts)
)
docs = st.lists(
    st.tuples(text, st.one_of(st.none(), text), st.one_of(st.none(), text)), max_size=12
)


def _same(a: bulk_terms.TermIds, b: bulk_terms.TermIds) -> None:
    assert list(a[0].items()) == list(b[0].items())  # ids given in the same order
    for x, y in zip(a[1:], b[1:], strict=True):
        assert x.dtype == y.dtype and np.array_equal(x, y)


def _unmarked(triples: list[tuple[str, str | None, str | None]]) -> bool:
    return not any("\x00" in t or "\x01" in t for doc in triples for t in doc if t)


@pytest.mark.parametrize("stem", [True, False])
@settings(deadline=None)  # examples: the profile's budget (tests/conftest.py)
@given(triples=docs)
def test_block_tokenising_equals_one_document_at_a_time(
    stem: bool, triples: list[tuple[str, str | None, str | None]]
) -> None:
    heads, tails, contexts = (
        [d[0] for d in triples],
        [d[1] for d in triples],
        [d[2] for d in triples],
    )
    single = one_by_one_term_ids(heads, tails, contexts, stem)
    block = block_term_ids(heads, tails, contexts, stem)
    assert (block is not None) == _unmarked(triples)
    _same(doc_term_ids(heads, tails, contexts, stem), single)
    # and each document's terms are tokenize()'s of its joined text
    vocab = list(single[0])
    ends = np.cumsum(single[2])
    for i, (head, tail) in enumerate(zip(heads, tails, strict=True)):
        terms = [vocab[t] for t in single[1][ends[i] - single[2][i] : ends[i]]]
        assert terms == tokenize(head if tail is None else f"{head}\n{tail}", stem=stem)


def test_blocks_of_documents_share_one_vocabulary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk_terms, "_BLOCK", 3)
    heads = [f"w{i % 4} node.js Running{i} the" for i in range(10)]
    tails = [None, "tag-a", "tag-a", None, "x", None, None, "y", "tag-a", None]
    contexts = [None, "ctx w1", None, "", None, None, "w9 node", None, None, "ΣΑΣ"]
    block = block_term_ids(heads, tails, contexts, True)
    assert block is not None
    _same(block, one_by_one_term_ids(heads, tails, contexts, True))


def test_a_marker_character_in_a_text_takes_the_document_by_document_way() -> None:
    heads, tails, contexts = ["a\x00b c", "d"], [None, "e\x01"], [None, "f"]
    assert block_term_ids(heads, tails, contexts, True) is None
    _same(
        doc_term_ids(heads, tails, contexts, True),
        one_by_one_term_ids(heads, tails, contexts, True),
    )
