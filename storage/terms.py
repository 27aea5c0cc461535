"""Index terms of a text (what BM25 matches on): words, compounds split, Snowball stems. Cheap
to import (no numpy). Not to be confused with retrieval/tokens.py, which counts model tokens.

Each distinct word is expanded once per process (``term_cache``): stop-word check, compound
split and stemming happen per word, not per token, so tokenising a big store at load costs
little more than the regex scan.
"""

from __future__ import annotations

import re
import threading
from itertools import chain
from typing import Any

_TOKEN_RE = re.compile(r"[\w][\w'+#.-]*[\w+#]|[\w]", re.UNICODE)
_COMPOUND_SEP_RE = re.compile(r"[.'-]+")
# A long-running server meets new words forever; past this many the cache starts over.
_CACHE_LIMIT = 500_000

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
    stemmer: Any = getattr(_stemmers, "english", None)
    if stemmer is None:
        try:
            import Stemmer  # type: ignore[import-not-found]

            # Its own cache only costs here: every distinct word reaches it once (TermCache).
            stemmer = Stemmer.Stemmer("english", 0)
        except ImportError:  # still a working index, only without stemming
            stemmer = False
        _stemmers.english = stemmer
    if not stemmer:
        return words
    stems: list[str] = stemmer.stemWords(words)
    return stems


def _stem_word(word: str) -> str:
    stemmer: Any = getattr(_stemmers, "english", None)
    if stemmer is None:
        return _stem_words([word])[0]
    return stemmer.stemWord(word) if stemmer else word


class TermCache(dict[str, tuple[str, ...]]):
    """word -> its index terms, computed on first sight (a dict, so lookups run in C)."""

    __slots__ = ("stem",)

    def __init__(self, stem: bool) -> None:
        super().__init__()
        self.stem = stem

    def __missing__(self, word: str) -> tuple[str, ...]:
        if word in STOP_WORDS:
            terms: tuple[str, ...] = ()
        elif word.isalnum():  # no compound separator: the word is its only term (most words)
            terms = (_stem_word(word),) if self.stem else (word,)
        else:
            # 'node.js' -> node.js node js; 'may-2023' -> may-2023 may 2023
            parts = [p for p in _COMPOUND_SEP_RE.split(word) if p and p not in STOP_WORDS]
            raw = [word, *parts] if len(parts) > 1 or (parts and parts[0] != word) else [word]
            terms = tuple(_stem_words(raw)) if self.stem else tuple(raw)
        if len(self) >= _CACHE_LIMIT:
            self.clear()
        self[word] = terms
        return terms


_CACHES = {True: TermCache(stem=True), False: TermCache(stem=False)}


def term_cache(stem: bool = True) -> TermCache:
    return _CACHES[bool(stem)]


def raw_words(text: str) -> list[str]:
    """Lower-cased word tokens, stop words included (what ``term_cache`` is keyed by)."""
    return _TOKEN_RE.findall(text.lower())


def words(text: str) -> list[str]:
    """Lower-cased word tokens with stop words removed; keeps 'c++', 'node.js', 'o'neil'."""
    return [t for t in _TOKEN_RE.findall(text.lower()) if t not in STOP_WORDS]


def tokenize(text: str, *, stem: bool = True) -> list[str]:
    """Index terms: words, compounds also split into parts, then stemmed ('running' -> 'run')."""
    get = _CACHES[bool(stem)].__getitem__
    return list(chain.from_iterable(map(get, _TOKEN_RE.findall(text.lower()))))


__all__ = ["STOP_WORDS", "TermCache", "raw_words", "term_cache", "tokenize", "words"]
