"""Lexical guards for near-duplicate detection: what sentence embeddings do not see.

Embeddings score "Sam chose Redis for billing (ticket 4411)" and "Aisha chose Redis for billing
(ticket 9120)" as near-identical, yet they are different facts. Two memories *conflict* when
both state numbers and neither's numbers contain the other's, or when both name things (their
entities, plus any of the store's known entities their text mentions) and neither's names
contain the other's. A paraphrase that adds a detail (one set inside the other) does not
conflict; one that swaps a detail does. Conflicting memories are never merged.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from cortexgraph.storage.models import Memory

_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_WORD = re.compile(r"[a-z0-9][a-z0-9_\-./]*[a-z0-9]|[a-z0-9]")
# Names written as code: snake_case and dotted names (dunning_runs, app.tenant_id,
# docsearch.json). Each part opens with a letter and has two characters or more, so "e.g",
# "2.3" and "v2.3" are not names.
_IDENTIFIER = re.compile(r"(?<![\w.])[a-z][a-z0-9]+(?:[_.][a-z][a-z0-9]+)+(?![\w])")
# Where an identifier's parts join (every identifier has one; a sentence's end has a space).
_JOINT = re.compile(r"[a-z0-9][_.][a-z]")
# Any swapped number conflicts: a share of shared numbers is always below this.
ANY_NUMBER = 1.01
# Counts that paraphrases spell differently ("1:1", "two weeks") are not facts worth guarding.
_TRIVIAL_NUMBERS = frozenset({"1", "1:1", "0"})
_NO_NUMBERS: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Details:
    """The numbers and names one memory states."""

    numbers: frozenset[str]
    names: frozenset[str]


def _normal(number: str) -> str:
    number = number.rstrip(".,:")
    return number[:-3] if number.endswith((":00", ".00")) else number  # 10:00 is 10


def numbers_in(text: str) -> frozenset[str]:
    written = _NUMBER.findall(text)
    if not written:  # most texts state none: no sets to build
        return _NO_NUMBERS
    found = {_normal(n) for n in written}
    return frozenset(n for n in found if n and n not in _TRIVIAL_NUMBERS)


def identifiers_in(text: str) -> frozenset[str]:
    """Names written as code (snake_case, dotted): what a technical note is about, as much
    as the entities it names."""
    return _identifiers_lowered(text.lower())


def _identifiers_lowered(lowered: str) -> frozenset[str]:
    # Quick scans: most texts name nothing as code.
    if not _may_join(lowered) or _JOINT.search(lowered) is None:
        return frozenset()
    return frozenset(m.rstrip(".") for m in _IDENTIFIER.findall(lowered))


def _may_join(lowered: str) -> bool:
    """Whether ``_JOINT`` may match: an underscore, or a dot with a letter after it (a
    sentence's end has a space), found at C speed: most texts end sentences and name
    nothing as code, and the regex tried every character of them (~2 us a text)."""
    if "_" in lowered:
        return True
    at = lowered.find(".")
    while at != -1:
        after = lowered[at + 1 : at + 2]
        if "a" <= after <= "z":  # "" (the end) sorts before "a"
            return True
        at = lowered.find(".", at + 1)
    return False


class _Vocabulary:
    """The entries of a vocabulary a text mentions: its words and its pairs of adjacent
    words that are entries. A word (no spaces) can only be an entry without one and a pair
    "a b" only one with one space, so a pair is joined only where its first word opens such
    an entry: not a string for every pair of every text."""

    def __init__(self, vocabulary: frozenset[str]) -> None:
        self.entries = vocabulary
        self.second: dict[str, set[str]] = {}  # first word -> second words of two-word entries
        for entry in vocabulary:
            first, space, rest = entry.partition(" ")
            if space and " " not in rest:
                self.second.setdefault(first, set()).add(rest)

    def mentions(self, lowered: str) -> frozenset[str]:
        words = _WORD.findall(lowered)
        second = self.second
        pairs = [f"{a} {b}" for a, b in itertools.pairwise(words) if a in second and b in second[a]]
        found = self.entries.intersection(words)
        return found.union(pairs) if pairs else found


class DetailExtractor:
    """Details of memories, with names drawn from a vocabulary of known entities."""

    def __init__(self, memories: Iterable[Memory], *, identifiers: bool = True) -> None:
        # Each distinct name lowered once (174 of 14k mentions at 10k memories).
        names: set[str] = set().union(*[m.entities for m in memories])
        self.vocabulary = frozenset(map(str.lower, names))
        self.identifiers = identifiers
        self._known = _Vocabulary(self.vocabulary)

    def details(self, memory: Memory, text: str | None = None) -> Details:
        """``text``: what the memory says, when not its whole content (a transcript line's
        date stamp is not a number it states; agents.restatement.claim_text)."""
        said = memory.content if text is None else text
        return Details(numbers_in(said), self.names(memory, said))

    def names(self, memory: Memory, said: str) -> frozenset[str]:
        """The names of ``details``: the memory's entities, the known ones ``said``
        mentions, and its names written as code."""
        lowered = said.lower()
        mentioned = self._known.mentions(lowered)
        if self.identifiers:
            return mentioned.union(map(str.lower, memory.entities), _identifiers_lowered(lowered))
        return mentioned.union(map(str.lower, memory.entities))


def _swapped(a: frozenset[str], b: frozenset[str], min_overlap: float) -> bool:
    if not a or not b or a <= b or b <= a:
        return False
    return len(a & b) / len(a | b) < min_overlap


def conflict(a: Details, b: Details, names_min_overlap: float = 0.6) -> str | None:
    """Why ``a`` and ``b`` cannot be duplicates ("numbers ..." / "names ..."), or None.

    Any swapped number conflicts. Names conflict when each side has one the other lacks and
    they share less than ``names_min_overlap`` (Jaccard) of them: paraphrases often mention
    one extra name each ("Sam said ..."), a different fact swaps the one that matters.
    """
    if _swapped(a.numbers, b.numbers, ANY_NUMBER):
        return f"numbers differ: {sorted(a.numbers ^ b.numbers)[:4]}"
    if _swapped(a.names, b.names, names_min_overlap):
        return f"names differ: {sorted(a.names ^ b.names)[:4]}"
    return None


def agree(a: Details, b: Details) -> bool:
    """Both state numbers, and the same ones: a fact said again repeats its specifics (a
    time, a version, a size) even when its words change."""
    return bool(a.numbers) and a.numbers == b.numbers


def conflicts(a: Details, b: Details, names_min_overlap: float = 0.6) -> bool:
    """``conflict(a, b) is not None`` without the reason: the cluster detector asks this of
    every candidate pair, and sorting and formatting the reason was half of that work."""
    return _swapped(a.numbers, b.numbers, ANY_NUMBER) or _swapped(
        a.names, b.names, names_min_overlap
    )


def swapped_pairs(
    pairs: Iterable[tuple[frozenset[str], frozenset[str]]], min_overlap: float
) -> list[bool]:
    """``_swapped`` of each pair of sets (two memories' numbers, or names), written out once
    for the thousands of pairs the cluster detector asks a run."""
    if min_overlap > 1.0:
        # Neither set inside the other: they share less than all of their union, so any
        # share is below the bar (ANY_NUMBER).
        return [bool(a and b) and not (a <= b or b <= a) for a, b in pairs]
    # The union's size from the intersection's: no union set is built.
    return [
        bool(a and b)
        and not (a <= b or b <= a)
        and (shared := len(a & b)) / (len(a) + len(b) - shared) < min_overlap
        for a, b in pairs
    ]


__all__ = [
    "ANY_NUMBER",
    "DetailExtractor",
    "Details",
    "agree",
    "conflict",
    "conflicts",
    "identifiers_in",
    "numbers_in",
    "swapped_pairs",
]
