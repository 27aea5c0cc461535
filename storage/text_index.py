"""An incremental BM25 inverted index over memory text, with a lower-weighted context field.

Postings are dicts (term -> {doc: tf}) so a save or delete updates the index in O(terms of the
document); a query touches only the postings of its own terms, never every memory.

Two fields per document: the main text (content, tags, entities) and an optional context (what
surrounded the memory, e.g. the neighbouring turns of a conversation). A context match counts
``context_weight`` times a main-text match: it rescues short memories ("Yes, last May!") without
letting a neighbour outrank the memory that says the thing itself.

Every add/remove is journalled (``changes_since``) so side indexes (the dense matrix, the
context field) can follow the store incrementally instead of rescanning it.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Container, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# numpy is imported where scoring needs it, not here: ``tokenize`` alone (the Claude Code
# prompt hook) must stay cheap to import.

_TOKEN_RE = re.compile(r"[\w][\w'+#.-]*[\w+#]|[\w]", re.UNICODE)

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves s t don shall may might
    must let us also""".split()
)

_stemmers = threading.local()


def _stem_words(words: list[str]) -> list[str]:
    """Snowball English stems (PyStemmer); words unchanged if it is not installed."""
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        try:
            import Stemmer  # type: ignore[import-not-found]

            stemmer = Stemmer.Stemmer("english")
        except ImportError:  # still a working index, only without stemming
            stemmer = False
        _stemmers.english = stemmer
    return stemmer.stemWords(words) if stemmer else words


def _split_compound(token: str) -> list[str]:
    """'node.js' -> ['node.js', 'node', 'js']; 'may-2023' -> [..., 'may', '2023']."""
    parts = [p for p in re.split(r"[.'-]+", token) if p]
    return [token, *parts] if len(parts) > 1 else [token]


def words(text: str) -> list[str]:
    """Lower-cased word tokens with stop words removed; keeps 'c++', 'node.js', 'o'neil'."""
    return [
        t.strip("'.-")
        for t in _TOKEN_RE.findall(text.lower())
        if t not in STOP_WORDS and t.strip("'.-")
    ]


def tokenize(text: str, *, stem: bool = True) -> list[str]:
    """Index terms: words, compounds also split into parts, then stemmed ('running' -> 'run')."""
    out: list[str] = []
    for w in words(text):
        out.extend(p for p in _split_compound(w) if p not in STOP_WORDS)
    return _stem_words(out) if stem else out


class _Field:
    """Postings and lengths of one field; per-term numpy arrays are built lazily for scoring."""

    __slots__ = ("postings", "doc_terms", "doc_len", "total_len", "_arrays")

    def __init__(self) -> None:
        self.postings: dict[str, dict[str, int]] = {}
        self.doc_terms: dict[str, Counter[str]] = {}
        self.doc_len: dict[str, int] = {}
        self.total_len = 0
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def add(self, doc_id: str, terms: Counter[str]) -> None:
        self.remove(doc_id)
        self.doc_terms[doc_id] = terms
        length = sum(terms.values())
        self.doc_len[doc_id] = length
        self.total_len += length
        arrays = self._arrays
        for term, tf in terms.items():
            self.postings.setdefault(term, {})[doc_id] = tf
            arrays.pop(term, None)

    def remove(self, doc_id: str) -> None:
        terms = self.doc_terms.pop(doc_id, None)
        if terms is None:
            return
        self.total_len -= self.doc_len.pop(doc_id)
        for term in terms:
            self._arrays.pop(term, None)
            posting = self.postings.get(term)
            if posting is not None:
                posting.pop(doc_id, None)
                if not posting:
                    del self.postings[term]

    def add_scores(
        self, acc: np.ndarray, slot_of: dict[str, int], lengths: np.ndarray,
        terms: Counter[str], n_docs: int, k1: float, b: float, weight: float,
    ) -> None:  # fmt: skip
        """Add this field's BM25 contribution into ``acc`` (indexed by document slot)."""
        import numpy as np

        if not self.doc_len:
            return
        avgdl = self.total_len / len(self.doc_len) or 1.0
        for term, qtf in terms.items():
            posting = self.postings.get(term)
            if not posting:
                continue
            arrays = self._arrays.get(term)
            if arrays is None:
                slots = np.fromiter((slot_of[d] for d in posting), np.int64, len(posting))
                tfs = np.fromiter(posting.values(), np.float32, len(posting))
                arrays = self._arrays[term] = (slots, tfs)
            slots, tfs = arrays
            df = len(posting)
            idf = weight * qtf * math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            dl = lengths[slots]
            acc[slots] += idf * tfs * (k1 + 1.0) / (tfs + k1 * (1.0 - b + b * dl / avgdl))


class TextIndex:
    """BM25 (Okapi) over documents added by id. Not thread-safe; the store serialises access.

    k1=1.2, b=0.75 and context_weight=0.3 were chosen on LoCoMo dev (bench/locomo.py)."""

    JOURNAL_LIMIT = 200_000

    def __init__(
        self, k1: float = 1.2, b: float = 0.75, context_weight: float = 0.3, stem: bool = True
    ) -> None:
        self.k1 = k1
        self.b = b
        self.context_weight = context_weight
        self.stem = stem
        self._main = _Field()
        self._context = _Field()
        # Documents get integer slots so that scoring runs on numpy arrays.
        self._slot_of: dict[str, int] = {}
        self._slot_ids: list[str | None] = []
        self._free_slots: list[int] = []
        import numpy as np

        self._main_len = np.zeros(0, dtype=np.float32)
        self._context_len = np.zeros(0, dtype=np.float32)
        self._context_text: dict[str, str] = {}
        self._journal: list[str] = []
        self._journal_base = 0  # version of _journal[0]

    def __len__(self) -> int:
        return len(self._main.doc_len)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._main.doc_len

    @property
    def version(self) -> int:
        return self._journal_base + len(self._journal)

    def _record(self, doc_id: str) -> None:
        self._journal.append(doc_id)
        if len(self._journal) > self.JOURNAL_LIMIT:
            drop = len(self._journal) // 2
            del self._journal[:drop]
            self._journal_base += drop

    def changes_since(self, version: int) -> tuple[int, set[str] | None]:
        """(current version, ids added/removed since ``version``), or None: resync everything."""
        if version < self._journal_base or version > self.version:
            return self.version, None
        return self.version, set(self._journal[version - self._journal_base :])

    def add(self, doc_id: str, text: str, context: str | None = None) -> None:
        """Index ``text`` (and optional ``context``) under ``doc_id``, replacing what it held."""
        terms = Counter(tokenize(text, stem=self.stem))
        slot = self._claim_slot(doc_id)
        self._main.add(doc_id, terms)
        self._main_len[slot] = sum(terms.values())
        self._context.remove(doc_id)
        self._context_len[slot] = 0
        self._context_text.pop(doc_id, None)
        if context:
            self.set_context(doc_id, context)
        self._record(doc_id)

    def set_context(self, doc_id: str, context: str | None) -> None:
        """Replace the context field of an indexed document (no-op if unchanged)."""
        if doc_id not in self._main.doc_len or self._context_text.get(doc_id) == (context or None):
            return
        self._context.remove(doc_id)
        self._context_text.pop(doc_id, None)
        self._context_len[self._slot_of[doc_id]] = 0
        if context:
            terms = Counter(tokenize(context, stem=self.stem))
            self._context.add(doc_id, terms)
            self._context_len[self._slot_of[doc_id]] = sum(terms.values())
            self._context_text[doc_id] = context

    def remove(self, doc_id: str) -> None:
        if doc_id not in self._main.doc_len:
            return
        self._main.remove(doc_id)
        self._context.remove(doc_id)
        self._context_text.pop(doc_id, None)
        slot = self._slot_of.pop(doc_id)
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
        n = len(self._main.doc_len)
        df = len(self._main.postings.get(term, ()))
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def score_array(self, query: str | Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """(slots, BM25 scores) of every document sharing a term with the query."""
        import numpy as np

        terms = tokenize(query, stem=self.stem) if isinstance(query, str) else list(query)
        n = len(self._main.doc_len)
        if not terms or not n:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        counts = Counter(terms)
        acc = np.zeros(len(self._slot_ids), dtype=np.float32)
        self._main.add_scores(acc, self._slot_of, self._main_len, counts, n, self.k1, self.b, 1.0)
        if self.context_weight > 0:
            self._context.add_scores(
                acc, self._slot_of, self._context_len, counts, n, self.k1, self.b,
                self.context_weight,
            )  # fmt: skip
        slots = np.flatnonzero(acc)
        return slots, acc[slots]

    def top(
        self, query: str | Iterable[str], k: int, allowed: Container[str] | None = None
    ) -> dict[str, float]:
        """The ``k`` best-scoring documents (among ``allowed`` ids), best first."""
        import numpy as np

        slots, scores = self.score_array(query)
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
                    out[doc_id] = float(scores[pos])  # type: ignore[index]
                    if len(out) >= k:
                        return out
            if take >= len(slots):
                return out
            take = min(len(slots), take * 4)

    def scores(self, query: str | Iterable[str]) -> dict[str, float]:
        """BM25 score of every document that shares at least one term with the query."""
        slots, scores = self.score_array(query)
        ids = self._slot_ids
        return {ids[s]: float(v) for s, v in zip(slots.tolist(), scores.tolist(), strict=True)}  # type: ignore[misc]

    def size_estimate(self) -> dict[str, int]:
        """Postings entries per field (what the index costs, for the bench)."""
        return {
            "terms": len(self._main.postings),
            "postings": sum(len(p) for p in self._main.postings.values()),
            "context_postings": sum(len(p) for p in self._context.postings.values()),
        }


__all__ = ["STOP_WORDS", "TextIndex", "tokenize", "words"]
