"""Sentence-level union of texts: every distinct sentence kept, near-identical ones collapsed.

Two sentences are near-identical when they have the same words (case, punctuation and spacing
aside), or when one's words are a subset of the other's and make up at least ``coverage`` of
them; the fuller sentence is kept, so no word is lost.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w+")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SPLIT.split(text) if s and s.strip()]


@dataclass(frozen=True, slots=True)
class SentenceUnion:
    sentences: tuple[str, ...]
    collapsed: int  # sentences dropped as near-identical to a kept one

    @property
    def text(self) -> str:
        return " ".join(_terminated(s) for s in self.sentences)


def union_sentences(texts: Iterable[str], coverage: float = 0.8) -> SentenceUnion:
    kept: list[tuple[frozenset[str], str]] = []
    collapsed = 0
    for text in texts:
        for sentence in split_sentences(text):
            words = frozenset(w.lower() for w in _WORD.findall(sentence))
            if not words:
                continue
            for k, (other, _) in enumerate(kept):
                if words <= other and len(words) >= coverage * len(other):
                    collapsed += 1
                    break
                if other < words and len(other) >= coverage * len(words):
                    kept[k] = (words, sentence)  # the fuller variant replaces it, in place
                    collapsed += 1
                    break
            else:
                kept.append((words, sentence))
    return SentenceUnion(tuple(s for _, s in kept), collapsed)


def _terminated(sentence: str) -> str:
    return sentence if sentence[-1] in ".!?:;" else sentence + "."


__all__ = ["SentenceUnion", "split_sentences", "union_sentences"]
