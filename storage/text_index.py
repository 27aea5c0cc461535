"""An incremental BM25 inverted index over memory text, with a lower-weighted context field.

A query touches only the postings of its own terms, never every memory. Postings live in a
numpy segment built in bulk when a store opens (``add_many``, see ``storage.postings``) plus
dicts (term -> {doc: tf}) for what is saved later, so a save or delete costs O(terms of the
document).

Two fields per document: the main text (content, tags, entities) and an optional context (what
surrounded the memory, e.g. the neighbouring turns of a conversation). A context match counts
``context_weight`` times a main-text match: it rescues short memories ("Yes, last May!") without
letting a neighbour outrank the memory that says the thing itself.

Every add/remove is journalled (``changes_since``) so side indexes (the dense matrix) can
follow the store incrementally instead of rescanning it.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Container, Iterable, KeysView, Sequence
from typing import TYPE_CHECKING

from cortexgraph.storage.bulk_terms import doc_term_ids
from cortexgraph.storage.postings import PostingsField, build_segment
from cortexgraph.storage.terms import STOP_WORDS, raw_words, tokenize, words

if TYPE_CHECKING:
    import numpy as np

# numpy is imported where indexing and scoring need it, not here: ``tokenize`` alone (the
# Claude Code prompt hook) must stay cheap to import.


# Tells one TextIndex (and its journal) from another; id() can be reused once one is freed.
_SERIALS = itertools.count(1)


# What ``__getstate__`` keeps of an index apart from its slot ids (``from_parts`` checks it).
_PICKLED_FIELDS = {
    "k1",
    "b",
    "context_weight",
    "stem",
    "_main",
    "_context",
    "_free_slots",
    "_main_len",
    "_context_len",
    "_context_text",
    "_journal",
    "_journal_base",
    "serial",
}


class TextIndex:
    """BM25 (Okapi) over documents added by id. Not thread-safe; the store serialises access.

    k1=1.2, b=0.75 and context_weight=0.3 were chosen on LoCoMo dev (bench/locomo.py)."""

    JOURNAL_LIMIT = 200_000

    def __init__(
        self, k1: float = 1.2, b: float = 0.75, context_weight: float = 0.3, stem: bool = True
    ) -> None:
        import numpy as np

        self.k1 = k1
        self.b = b
        self.context_weight = context_weight
        self.stem = stem
        self._main = PostingsField()
        self._context = PostingsField()
        # Documents get integer slots so that scoring runs on numpy arrays.
        self._slot_of: dict[str, int] = {}
        self._slot_ids: list[str | None] = []
        self._free_slots: list[int] = []
        self._main_len = np.zeros(0, dtype=np.float32)
        self._context_len = np.zeros(0, dtype=np.float32)
        self._context_text: dict[str, str] = {}
        self._journal: list[str] = []
        self._journal_base = 0  # version of _journal[0]
        self.serial = next(_SERIALS)

    def __getstate__(self) -> dict[str, object]:
        # A copy (snapshot) starts a journal of its own: followers resync from scratch. The
        # id -> slot map is rebuilt from the slots on load, quicker than unpickling a dict.
        state = {**self.__dict__, "_journal": [], "_journal_base": 0}
        del state["_slot_of"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        ids = self._slot_ids  # free slots hold None
        self._slot_of = dict(
            zip(filter(None, ids), itertools.compress(range(len(ids)), ids), strict=True)
        )
        self.serial = next(_SERIALS)

    def copy(self) -> TextIndex:
        """An index equal to this one that later adds and removes here leave as it is, made
        in a fraction of pickling it (10-30 ms at 100k memories against ~0.1 s): the store's
        snapshot refresh takes it under the store's lock and pickles it after releasing it
        (storage.snapshot_refresh's ``refresh_snapshots``). It starts a journal of its own."""
        new = TextIndex.__new__(TextIndex)
        new.__dict__.update(self.__dict__)
        new._main, new._context = self._main.copy(), self._context.copy()
        new._slot_of = dict(self._slot_of)
        new._slot_ids = list(self._slot_ids)
        new._free_slots = list(self._free_slots)
        new._main_len, new._context_len = self._main_len.copy(), self._context_len.copy()
        new._context_text = dict(self._context_text)
        new._journal, new._journal_base = [], 0
        new.serial = next(_SERIALS)
        return new

    def snapshot_parts(self) -> tuple[list[str | None], dict[str, object]]:
        """The slot ids, and the rest of the pickled state (the index snapshot pickles the
        rest on its own and unpickles it on first use: storage.deferred_text.DeferredText)."""
        state = self.__getstate__()
        return state.pop("_slot_ids"), state  # type: ignore[return-value]

    @classmethod
    def from_parts(cls, slot_ids: list[str | None], state: object) -> TextIndex:
        """The index ``snapshot_parts`` took apart; TypeError if ``state`` is not such a rest."""
        if type(state) is not dict or set(state) != _PICKLED_FIELDS:
            raise TypeError("not the pickled state of a TextIndex")
        index = cls.__new__(cls)
        index.__setstate__({**state, "_slot_ids": slot_ids})
        return index

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot_of

    def doc_ids(self) -> KeysView[str]:
        """The ids of the indexed documents (a live view)."""
        return self._slot_of.keys()

    @property
    def version(self) -> int:
        return self._journal_base + len(self._journal)

    def _record(self, doc_id: str) -> None:
        self._journal.append(doc_id)
        if len(self._journal) > self.JOURNAL_LIMIT:
            self._trim_journal()

    def _trim_journal(self) -> None:
        drop = len(self._journal) // 2
        del self._journal[:drop]
        self._journal_base += drop

    def changes_since(self, version: int) -> tuple[int, set[str] | None]:
        """(current version, ids added/removed since ``version``), or None: resync everything."""
        if version < self._journal_base or version > self.version:
            return self.version, None
        return self.version, set(self._journal[version - self._journal_base :])

    def _terms(self, text: str) -> Counter[str]:
        return Counter(tokenize(text, stem=self.stem))

    def add(self, doc_id: str, text: str, context: str | None = None) -> None:
        """Index ``text`` (and optional ``context``) under ``doc_id``, replacing what it held."""
        terms = self._terms(text)
        slot = self._claim_slot(doc_id)
        self._main.add(doc_id, slot, terms)
        self._main_len[slot] = sum(terms.values())
        self._context.remove(doc_id, slot)
        self._context_len[slot] = 0
        self._context_text.pop(doc_id, None)
        if context:
            self.set_context(doc_id, context)
        self._record(doc_id)

    def add_many(self, docs: Iterable[tuple[str, str, str | None]]) -> None:
        """Index many (id, text, context) documents: opening a store.

        Into an empty index this builds numpy segments (each distinct word tokenised once,
        postings grouped by sorting); otherwise it is ``add`` in a loop."""
        self.add_many_parts((doc_id, text, None, context) for doc_id, text, context in docs)

    def add_many_parts(self, docs: Iterable[tuple[str, str, str | None, str | None]]) -> None:
        """``add_many`` of (id, head, tail, context): the text is ``f"{head}\\n{tail}"`` (or
        the head alone when tail is None). Memories share few tails (their tags and
        entities): each distinct tail is tokenised once, and no joined text is built."""
        columns = tuple(zip(*docs, strict=True))
        if columns:
            self.add_many_columns(*columns)

    def add_many_columns(
        self,
        ids: Sequence[str],
        heads: Sequence[str],
        tails: Sequence[str | None],
        context_of: Sequence[str | None],
    ) -> None:
        """``add_many_parts`` given a column per part (what opening a store has at hand,
        without a tuple per document)."""
        if self._slot_ids:
            for doc_id, head, tail, context in zip(ids, heads, tails, context_of, strict=True):
                self.add(doc_id, head if tail is None else f"{head}\n{tail}", context)
            return
        import numpy as np

        repeats: list[tuple[str, str, str | None, str | None]] = []
        if len(set(ids)) < len(ids):  # a repeated id replaces the first through ``add`` below
            seen: set[str] = set()
            firsts: list[tuple[str, str, str | None, str | None]] = []
            for doc in zip(ids, heads, tails, context_of, strict=True):
                (repeats if doc[0] in seen else firsts).append(doc)
                seen.add(doc[0])
            ids, heads, tails, context_of = zip(*firsts, strict=True)
        if not ids:
            return
        vocab, main_ids, lens, ctx_ids, c_lens = doc_term_ids(heads, tails, context_of, self.stem)
        contexts = {doc_id: c for doc_id, c in zip(ids, context_of, strict=True) if c}
        n = len(ids)
        segment, n_docs, total = build_segment(main_ids, lens, np.ones(n, bool), vocab)
        self._main.set_segment(segment, n_docs, total)
        if contexts:
            has_context = np.fromiter((i in contexts for i in ids), bool, n)
            segment, n_docs, total = build_segment(ctx_ids, c_lens, has_context, vocab)
            self._context.set_segment(segment, n_docs, total)
        self._context_text = contexts
        capacity = max(64, n)
        self._slot_of = dict(zip(ids, range(n), strict=True))
        self._slot_ids = [*ids, *([None] * (capacity - n))]
        self._free_slots = list(range(capacity - 1, n - 1, -1))
        self._main_len = np.zeros(capacity, np.float32)
        self._main_len[:n] = lens
        self._context_len = np.zeros(capacity, np.float32)
        self._context_len[:n] = c_lens
        self._journal.extend(ids)
        while len(self._journal) > self.JOURNAL_LIMIT:
            self._trim_journal()
        for doc_id, head, tail, context in repeats:
            self.add(doc_id, head if tail is None else f"{head}\n{tail}", context)

    def set_context(self, doc_id: str, context: str | None) -> None:
        """Replace the context field of an indexed document (no-op if unchanged)."""
        slot = self._slot_of.get(doc_id)
        if slot is None or self._context_text.get(doc_id) == (context or None):
            return
        self._context.remove(doc_id, slot)
        self._context_text.pop(doc_id, None)
        self._context_len[slot] = 0
        if context:
            terms = self._terms(context)
            self._context.add(doc_id, slot, terms)
            self._context_len[slot] = sum(terms.values())
            self._context_text[doc_id] = context

    def remove(self, doc_id: str) -> None:
        slot = self._slot_of.pop(doc_id, None)
        if slot is None:
            return
        self._main.remove(doc_id, slot)
        self._context.remove(doc_id, slot)
        self._context_text.pop(doc_id, None)
        self._slot_ids[slot] = None
        self._main_len[slot] = self._context_len[slot] = 0
        self._free_slots.append(slot)
        self._record(doc_id)

    def _claim_slot(self, doc_id: str) -> int:
        slot = self._slot_of.get(doc_id)
        if slot is not None:
            return slot
        if not self._free_slots:
            import numpy as np

            old = len(self._slot_ids)
            new = max(64, 2 * old)
            self._slot_ids.extend([None] * (new - old))
            self._main_len = np.concatenate([self._main_len, np.zeros(new - old, np.float32)])
            self._context_len = np.concatenate([self._context_len, np.zeros(new - old, np.float32)])
            self._free_slots.extend(range(new - 1, old - 1, -1))
        slot = self._free_slots.pop()
        self._slot_of[doc_id] = slot
        self._slot_ids[slot] = doc_id
        return slot

    def idf(self, term: str) -> float:
        n = len(self._slot_of)
        df = self._main.df(term)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def score_array(
        self, query: str | Iterable[str], context_weight: float | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(slots, BM25 scores) of every document sharing a term with the query."""
        import numpy as np

        terms = tokenize(query, stem=self.stem) if isinstance(query, str) else list(query)
        n = len(self._slot_of)
        context_weight = self.context_weight if context_weight is None else context_weight
        if not terms or not n:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        counts = Counter(terms)
        acc = np.zeros(len(self._slot_ids), dtype=np.float32)
        self._main.add_scores(acc, self._slot_of, self._main_len, counts, n, self.k1, self.b, 1.0)
        if context_weight > 0:
            self._context.add_scores(
                acc, self._slot_of, self._context_len, counts, n, self.k1, self.b, context_weight
            )
        slots = np.flatnonzero(acc)
        return slots, acc[slots]

    def top(
        self,
        query: str | Iterable[str],
        k: int,
        allowed: Container[str] | None = None,
        context_weight: float | None = None,
    ) -> dict[str, float]:
        """The ``k`` best-scoring documents (among ``allowed`` ids), best first."""
        import numpy as np

        slots, scores = self.score_array(query, context_weight)
        if not len(slots):
            return {}
        ids = self._slot_ids
        out: dict[str, float] = {}
        take = min(len(slots), max(k * 4, 64) if allowed is not None else k)
        while True:
            order = np.argpartition(-scores, take - 1)[:take] if take < len(slots) else None
            order = (
                order[np.argsort(-scores[order], kind="stable")]
                if order is not None
                else (np.argsort(-scores, kind="stable"))
            )
            out.clear()
            for pos in order:
                doc_id = ids[slots[pos]]
                if allowed is None or doc_id in allowed:
                    out[doc_id] = float(scores[pos])
                    if len(out) >= k:
                        return out
            if take >= len(slots):
                return out
            take = min(len(slots), take * 4)

    def scores(self, query: str | Iterable[str]) -> dict[str, float]:
        """BM25 score of every document that shares at least one term with the query."""
        slots, scores = self.score_array(query)
        ids = self._slot_ids
        return {ids[s]: float(v) for s, v in zip(slots.tolist(), scores.tolist(), strict=True)}

    def size_estimate(self) -> dict[str, int]:
        """Postings entries per field (what the index costs, for the bench)."""
        terms, postings = self._main.size()
        return {"terms": terms, "postings": postings, "context_postings": self._context.size()[1]}


__all__ = ["STOP_WORDS", "TextIndex", "raw_words", "tokenize", "words"]
