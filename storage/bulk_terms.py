"""The term ids of many documents at once: the tokenising half of building the BM25 index when
a store opens (``TextIndex.add_many_parts``).

``block_term_ids`` lays every document's text end to end in one string, with a marker chunk
after each field, so that lower-casing and splitting on whitespace are one C call each for the
whole store; each distinct chunk is then mapped to its terms once (the plain words' stems in
one call of the stemmer), and the per-token work is numpy gathers over chunk codes. It gives
the term ids, lengths and vocabulary of ``one_by_one_term_ids`` (each document split alone)
exactly; a text holding a marker character falls back to that way
(tests/storage/test_storage_bulk_terms.py holds both to the same result).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, repeat
from typing import TYPE_CHECKING

from cortexgraph.storage.terms import _TOKEN_RE, STOP_WORDS, _stem_words, term_cache

if TYPE_CHECKING:
    import numpy as np

# (vocabulary: term -> id in order of first sight, main-field term ids end to end, main lengths,
#  context term ids, context lengths)
TermIds = tuple[dict[str, int], "np.ndarray", "np.ndarray", "np.ndarray", "np.ndarray"]

# Neither is whitespace, and lower() never makes one: surrounded by newlines each is a chunk of
# its own that only a marker makes (a text that holds one takes the document-by-document way).
_END_MAIN, _END_DOC = "\x01", "\x00"
# Documents lowered and split at once: the chunks of a block (a few MB) are freed before the
# next, so their memory is reused instead of faulting in the whole store's (as one string did).
_BLOCK = 2048


class _TermIds(dict[str, tuple[int, ...]]):
    """Whitespace-separated chunk ('node.js,') -> ids of its terms in a vocabulary being built.

    No token spans whitespace, so a text's terms are its chunks' terms in order; splitting on
    whitespace is several times quicker than the token regex over the whole text, and the
    regex then runs once per distinct chunk."""

    __slots__ = ("terms_of", "vocab")

    def __init__(self, vocab: dict[str, int], stem: bool) -> None:
        super().__init__()
        self.vocab = vocab
        self.terms_of = term_cache(stem)

    def __missing__(self, chunk: str) -> tuple[int, ...]:
        vocab, terms_of = self.vocab, self.terms_of
        if chunk.isalnum():  # one word (\w is exactly str.isalnum plus '_'), one term or none
            terms = terms_of[chunk]
            ids: tuple[int, ...] = (vocab.setdefault(terms[0], len(vocab)),) if terms else ()
        else:
            ids = tuple(
                vocab.setdefault(t, len(vocab))
                for w in _TOKEN_RE.findall(chunk)
                for t in terms_of[w]
            )
        self[chunk] = ids
        return ids


def one_by_one_term_ids(
    heads: Sequence[str],
    tails: Sequence[str | None],
    contexts: Sequence[str | None],
    stem: bool,
) -> TermIds:
    """Each document's text (``head\\ntail``) and context split on its own."""
    import numpy as np

    vocab: dict[str, int] = {}
    get = _TermIds(vocab, stem).__getitem__
    # Lists of the cached ids (no new int objects); array('i') converts each, slower.
    main_ids: list[int] = []
    ctx_ids: list[int] = []
    main_lens: list[int] = []
    ctx_lens: list[int] = []
    tail_ids: dict[str | None, tuple[int, ...]] = {None: ()}
    for head, tail, context in zip(heads, tails, contexts, strict=True):
        n0 = len(main_ids)
        # "\n" is whitespace: the joined text's terms are the head's, then the tail's.
        main_ids.extend(chain.from_iterable(map(get, head.lower().split())))
        tail_terms = tail_ids.get(tail)
        if tail_terms is None:  # memories share few tails (their tags and entities)
            tail_terms = tail_ids[tail] = tuple(
                chain.from_iterable(map(get, tail.lower().split()))  # type: ignore[union-attr]
            )
        main_ids.extend(tail_terms)
        main_lens.append(len(main_ids) - n0)
        n0 = len(ctx_ids)
        if context:
            ctx_ids.extend(chain.from_iterable(map(get, context.lower().split())))
        ctx_lens.append(len(ctx_ids) - n0)
    return (
        vocab,
        np.array(main_ids, np.int64),
        np.array(main_lens, np.int64),
        np.array(ctx_ids, np.int64),
        np.array(ctx_lens, np.int64),
    )


def _chunk_terms(chunks: list[str], stem: bool) -> list[tuple[str, ...]]:
    """The terms of each distinct chunk, as ``_TermIds`` finds them."""
    cache = term_cache(stem)
    # Plain words never seen before (most of a store's distinct chunks: names, ids, rare
    # words) are stemmed by one call of the stemmer instead of one call each.
    new = [c for c in chunks if c.isalnum() and c not in cache and c not in STOP_WORDS]
    if new:
        stems = _stem_words(new) if stem else new
        cache.update(zip(new, zip(stems, strict=True), strict=True))
    get = cache.__getitem__  # stop words and later chunks: TermCache.__missing__
    return [
        get(c) if c.isalnum() else tuple(t for w in _TOKEN_RE.findall(c) for t in get(w))
        for c in chunks
    ]


class _Codes(dict[str, int]):
    """Chunk -> its number, given in order of first sight."""

    __slots__ = ()

    def __missing__(self, chunk: str) -> int:
        code = self[chunk] = len(self)
        return code


def block_term_ids(
    heads: Sequence[str],
    tails: Sequence[str | None],
    contexts: Sequence[str | None],
    stem: bool,
) -> TermIds | None:
    """``one_by_one_term_ids`` of all documents through one string, or None if a text holds a
    marker character."""
    import numpy as np

    n = len(heads)
    code_of = _Codes.fromkeys((_END_MAIN, _END_DOC))
    code_of.update(zip(code_of, range(2), strict=True))  # the markers are codes 0 and 1
    get = code_of.__getitem__
    blocks: list[np.ndarray] = [np.zeros(0, np.int64)]
    for start in range(0, n, _BLOCK):
        stop = min(n, start + _BLOCK)
        text = "".join(
            chain.from_iterable(
                zip(
                    heads[start:stop],
                    repeat("\n"),
                    (t or "" for t in tails[start:stop]),
                    repeat(f"\n{_END_MAIN}\n"),
                    (c or "" for c in contexts[start:stop]),
                    repeat(f"\n{_END_DOC}\n"),
                    strict=False,  # the repeats are endless
                )
            )
        )
        if text.count(_END_MAIN) != stop - start or text.count(_END_DOC) != stop - start:
            return None
        # The case mapping is per character but for the Greek final sigma, whose context
        # stops at the newline around a marker as at the end of a text: lower() of each.
        chunks = text.lower().split()
        blocks.append(np.fromiter(map(get, chunks), np.int32, len(chunks)))
    codes = np.concatenate(blocks)
    distinct = list(code_of)  # the markers, then the chunks in order of first sight
    terms = _chunk_terms(distinct, stem)
    # A term is first seen in the first sight of a chunk that holds it: the distinct chunks'
    # terms in their order give each term the id the document-by-document way gives it.
    flat = list(chain.from_iterable(terms))
    vocab = dict(zip(dict.fromkeys(flat), range(len(flat)), strict=False))
    flat_ids = np.fromiter(map(vocab.__getitem__, flat), np.int64, len(flat))
    n_terms = np.fromiter(map(len, terms), np.int64, len(terms))
    starts = np.cumsum(n_terms) - n_terms
    if n_terms.max(initial=0) <= 1:  # no compound: a chunk has one term or none
        # one gather over the stream: each chunk's term id, or -1 for none (stop word, marker)
        of_chunk = np.full(len(terms), -1, np.int64)
        one = n_terms == 1
        of_chunk[one] = flat_ids[starts[one]]
        ids = of_chunk[codes]
        has = ids >= 0
        term_ids, ends = ids[has], np.cumsum(has)
    else:
        counts = n_terms[codes]  # terms of each chunk of the stream
        ends = np.cumsum(counts)
        gather = np.repeat(starts[codes] - (ends - counts), counts)
        term_ids = flat_ids[gather + np.arange(len(gather))]
    # The terms up to each marker end a field: main and context of each document in turn.
    field_lens = np.diff(ends[np.flatnonzero(codes < 2)], prepend=0)
    lens = field_lens.reshape(n, 2)
    main_lens, ctx_lens = lens[:, 0].copy(), lens[:, 1].copy()
    if not ctx_lens.any():
        return vocab, term_ids, main_lens, term_ids[:0].copy(), ctx_lens
    in_main = np.repeat(np.tile(np.array([True, False]), n), field_lens)
    return vocab, term_ids[in_main], main_lens, term_ids[~in_main], ctx_lens


def doc_term_ids(
    heads: Sequence[str],
    tails: Sequence[str | None],
    contexts: Sequence[str | None],
    stem: bool,
) -> TermIds:
    """Term ids of documents whose main text is ``f"{head}\\n{tail}"`` (the head alone when
    tail is None) and whose context field is the context (none when empty)."""
    block = block_term_ids(heads, tails, contexts, stem)
    return block if block is not None else one_by_one_term_ids(heads, tails, contexts, stem)


__all__ = ["TermIds", "block_term_ids", "doc_term_ids", "one_by_one_term_ids"]
