"""An incremental BM25 inverted index over memory text (content, tags and entities).

Postings are dicts (term -> {doc: tf}) so a save or delete updates the index in O(terms of the
document); a query touches only the postings of its own terms, never every memory.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

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


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens with stop words removed; keeps 'c++', 'node.js', 'o'neil'."""
    return [
        t.strip("'.-")
        for t in _TOKEN_RE.findall(text.lower())
        if t not in STOP_WORDS and t.strip("'.-")
    ]


class TextIndex:
    """BM25 (Okapi) over documents added by id. Not thread-safe; the store serialises access."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[str, int]] = {}
        self._doc_terms: dict[str, Counter[str]] = {}
        self._doc_len: dict[str, int] = {}
        self._total_len = 0

    def __len__(self) -> int:
        return len(self._doc_len)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._doc_len

    def add(self, doc_id: str, text: str) -> None:
        """Index ``text`` under ``doc_id``, replacing what the id held before."""
        if doc_id in self._doc_len:
            self.remove(doc_id)
        terms = Counter(tokenize(text))
        self._doc_terms[doc_id] = terms
        length = sum(terms.values())
        self._doc_len[doc_id] = length
        self._total_len += length
        for term, tf in terms.items():
            self._postings.setdefault(term, {})[doc_id] = tf

    def remove(self, doc_id: str) -> None:
        terms = self._doc_terms.pop(doc_id, None)
        if terms is None:
            return
        self._total_len -= self._doc_len.pop(doc_id)
        for term in terms:
            posting = self._postings.get(term)
            if posting is not None:
                posting.pop(doc_id, None)
                if not posting:
                    del self._postings[term]

    def idf(self, term: str) -> float:
        n = len(self._doc_len)
        df = len(self._postings.get(term, ()))
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query: str | Iterable[str]) -> dict[str, float]:
        """BM25 score of every document that shares at least one term with the query."""
        terms = tokenize(query) if isinstance(query, str) else list(query)
        if not terms or not self._doc_len:
            return {}
        avgdl = self._total_len / len(self._doc_len) or 1.0
        k1, b = self.k1, self.b
        doc_len = self._doc_len
        out: dict[str, float] = {}
        for term, qtf in Counter(terms).items():
            posting = self._postings.get(term)
            if not posting:
                continue
            idf = self.idf(term) * qtf
            norm = k1 * (1.0 - b)
            scale = k1 * b / avgdl
            for doc_id, tf in posting.items():
                out[doc_id] = out.get(doc_id, 0.0) + idf * tf * (k1 + 1.0) / (
                    tf + norm + scale * doc_len[doc_id]
                )
        return out


__all__ = ["STOP_WORDS", "TextIndex", "tokenize"]
