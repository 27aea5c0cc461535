"""One BM25 field: a bulk-built numpy segment plus an incremental dict overlay.

Opening a store indexes every memory at once: those postings are built by numpy sorts into a
read-only ``Segment`` (CSR arrays), which costs a fraction of one dict update per term and
holds 10 bytes per posting instead of a dict entry. Later saves go to the overlay dicts, so a
save still costs O(terms of the document). A document in the segment that is updated or
deleted is masked out of it (``live``) and its terms' document frequencies are decremented,
so scores are exactly those of an index built from scratch.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(slots=True)
class Segment:
    """Postings of documents in rows (= text-index slots) ``0..len(lens)-1``."""

    vocab: dict[str, int]  # term -> term id (shared by the fields built together)
    ptr: np.ndarray  # int64 [terms + 1]: postings of term t are [ptr[t], ptr[t+1])
    rows: np.ndarray  # int32 [postings]: the row (slot) of each posting, ascending per term
    tfs: np.ndarray  # float32 [postings]
    df: np.ndarray  # int64 [terms]: live documents per term
    tokens: np.ndarray  # int32 [tokens]: each row's term ids in text order (for removals)
    row_ptr: np.ndarray  # int64 [rows + 1]: row r's tokens are tokens[row_ptr[r]:row_ptr[r+1]]
    lens: np.ndarray  # int64 [rows]: terms per row
    live: np.ndarray  # bool [rows]: row holds a document of this field, not since replaced
    dead: int = 0

    def terms_of(self, row: int) -> np.ndarray:
        import numpy as np

        return np.unique(self.tokens[self.row_ptr[row] : self.row_ptr[row + 1]])


def build_segment(
    term_ids: np.ndarray, lens: np.ndarray, present: np.ndarray, vocab: dict[str, int]
) -> tuple[Segment, int, int]:
    """(segment, documents, total length) from rows' term ids laid end to end.

    ``present`` marks the rows that hold a document in this field (one can have no terms)."""
    import numpy as np

    n_rows, n_terms = len(lens), max(1, len(vocab))
    # One sort of (term, row) keys gives the postings grouped by term, rows ascending, and
    # each (term, row) once with its count: the term frequency. np.unique's steps, in place
    # (each fresh 24 MB temporary at 100k memories costs its page faults).
    keys = term_ids * n_rows
    keys += np.repeat(np.arange(n_rows, dtype=np.int64), lens)
    keys.sort()
    first = np.empty(len(keys), bool)
    first[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    at = np.flatnonzero(first)
    tf = np.diff(at, append=len(keys))
    keys = keys[at]
    p_terms = keys // n_rows
    keys -= p_terms * n_rows  # now the rows
    p_rows = keys
    df = np.bincount(p_terms, minlength=n_terms).astype(np.int64)
    ptr = np.zeros(n_terms + 1, np.int64)
    np.cumsum(df, out=ptr[1:])
    row_ptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(lens, out=row_ptr[1:])
    segment = Segment(
        vocab=vocab,
        ptr=ptr,
        rows=p_rows.astype(np.int32),
        tfs=tf.astype(np.float32),
        df=df,
        tokens=term_ids.astype(np.int32),
        row_ptr=row_ptr,
        lens=lens.astype(np.int64),
        live=present.astype(bool),
    )
    return segment, int(segment.live.sum()), int(lens.sum())


class PostingsField:
    """Postings and lengths of one field; overlay per-term numpy arrays are built lazily."""

    __slots__ = ("_arrays", "doc_len", "doc_terms", "n_docs", "postings", "segment", "total_len")

    def __init__(self) -> None:
        self.postings: dict[str, dict[str, int]] = {}  # overlay: term -> {doc id: tf}
        # overlay documents: term -> tf (a Counter when added, a plain dict when unpickled)
        self.doc_terms: dict[str, Mapping[str, int]] = {}
        self.doc_len: dict[str, int] = {}
        self.total_len = 0  # over overlay and live segment documents
        self.n_docs = 0
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.segment: Segment | None = None

    def __getstate__(self) -> tuple[None, dict[str, object]]:
        # The overlay documents' terms as plain dicts: a Counter unpickles through its Python
        # __init__ and update (2,300 of them at 10k memories: a fifth of opening the store's
        # snapshot); a dict is built by the C unpickler. Only their keys are read again.
        state = {name: getattr(self, name) for name in self.__slots__}
        state["doc_terms"] = {d: dict(terms) for d, terms in self.doc_terms.items()}
        state["_arrays"] = {}  # a cache, rebuilt on use
        return None, state

    def copy(self) -> PostingsField:
        """A copy that later ``add`` and ``remove`` calls on this field leave as it is: the
        overlay's dicts and the segment's two changing arrays (``live``, ``df``) copied, its
        read-only arrays and vocabulary shared (storage.text_index's ``TextIndex.copy``)."""
        import dataclasses

        new = PostingsField()
        new.postings = {term: dict(docs) for term, docs in self.postings.items()}
        new.doc_terms = dict(self.doc_terms)  # a document's terms are replaced, never changed
        new.doc_len = dict(self.doc_len)
        new.total_len, new.n_docs = self.total_len, self.n_docs
        seg = self.segment
        if seg is not None:
            new.segment = dataclasses.replace(seg, live=seg.live.copy(), df=seg.df.copy())
        return new

    def set_segment(self, segment: Segment, n_docs: int, total_len: int) -> None:
        """Start from a bulk-built segment (the field must be empty)."""
        self.segment = segment
        self.n_docs = n_docs
        self.total_len = total_len

    def add(self, doc_id: str, slot: int, terms: Counter[str]) -> None:
        self.remove(doc_id, slot)
        self.doc_terms[doc_id] = terms
        length = sum(terms.values())
        self.doc_len[doc_id] = length
        self.total_len += length
        self.n_docs += 1
        arrays = self._arrays
        for term, tf in terms.items():
            self.postings.setdefault(term, {})[doc_id] = tf
            arrays.pop(term, None)

    def remove(self, doc_id: str, slot: int | None) -> None:
        terms = self.doc_terms.pop(doc_id, None)
        if terms is not None:
            self.total_len -= self.doc_len.pop(doc_id)
            self.n_docs -= 1
            for term in terms:
                self._arrays.pop(term, None)
                posting = self.postings.get(term)
                if posting is not None:
                    posting.pop(doc_id, None)
                    if not posting:
                        del self.postings[term]
            return
        seg = self.segment
        if seg is not None and slot is not None and slot < len(seg.live) and seg.live[slot]:
            seg.live[slot] = False
            seg.dead += 1
            seg.df[seg.terms_of(slot)] -= 1
            self.total_len -= int(seg.lens[slot])
            self.n_docs -= 1

    def df(self, term: str) -> int:
        n = len(self.postings.get(term, ()))
        seg = self.segment
        if seg is not None:
            tid = seg.vocab.get(term)
            if tid is not None:
                n += int(seg.df[tid])
        return n

    def _parts(self, term: str, slot_of: dict[str, int]) -> list[tuple[np.ndarray, np.ndarray]]:
        """(slots, term frequencies) of the term's live postings, overlay and segment."""
        import numpy as np

        parts = []
        posting = self.postings.get(term)
        if posting:
            arrays = self._arrays.get(term)
            if arrays is None:
                slots = np.fromiter((slot_of[d] for d in posting), np.int64, len(posting))
                tfs = np.fromiter(posting.values(), np.float32, len(posting))
                arrays = self._arrays[term] = (slots, tfs)
            parts.append(arrays)
        seg = self.segment
        if seg is not None:
            tid = seg.vocab.get(term)
            if tid is not None and seg.df[tid] > 0:
                lo, hi = seg.ptr[tid], seg.ptr[tid + 1]
                rows, tfs = seg.rows[lo:hi], seg.tfs[lo:hi]
                if seg.dead:
                    keep = seg.live[rows]
                    rows, tfs = rows[keep], tfs[keep]
                parts.append((rows, tfs))
        return parts

    def add_scores(
        self,
        acc: np.ndarray,
        slot_of: dict[str, int],
        lengths: np.ndarray,
        terms: Counter[str],
        n_docs: int,
        k1: float,
        b: float,
        weight: float,
    ) -> None:
        """Add this field's BM25 contribution into ``acc`` (indexed by document slot)."""
        if not self.n_docs:
            return
        avgdl = self.total_len / self.n_docs or 1.0
        for term, qtf in terms.items():
            df = self.df(term)
            if not df:
                continue
            idf = weight * qtf * math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            for slots, tfs in self._parts(term, slot_of):
                dl = lengths[slots]
                acc[slots] += idf * tfs * (k1 + 1.0) / (tfs + k1 * (1.0 - b + b * dl / avgdl))

    def size(self) -> tuple[int, int]:
        """(distinct terms, postings) currently live."""
        terms, postings = len(self.postings), sum(len(p) for p in self.postings.values())
        seg = self.segment
        if seg is not None:
            terms += int((seg.df > 0).sum()) - sum(
                1 for t in self.postings if t in seg.vocab and seg.df[seg.vocab[t]] > 0
            )
            postings += int(seg.df.sum())
        return terms, postings


__all__ = ["PostingsField", "Segment", "build_segment"]
