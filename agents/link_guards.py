"""Which pairs of memories the cluster detector may link, and why not the others.

Three guards, each a reason a pair is never one fact said twice, whatever its similarity:

- ``merged before``: one is a merge and the other existed then. A merged memory states the
  union of its sources' details, so the other guards would judge it more leniently than its
  sources; re-deciding an old pair on every run would snowball.
- ``numbers/names``: swapped numbers or names (agents.duplicates), read from what the memory
  says (a transcript line's date stamp is not a number it states).
- ``speakers`` / ``sessions`` / ``question``: the restatement rule (agents.restatement).

A verdict is asked again and again as groups grow; each pair is judged once. The detector
asks thousands of pairs at once (``reasons``): the first three guards are then read from each
memory's features as arrays, and only the pairs they let through are compared in Python.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from cortexgraph.agents.duplicates import (
    ANY_NUMBER,
    DetailExtractor,
    Details,
    agree,
    conflicts,
    numbers_in,
    swapped_pairs,
)
from cortexgraph.agents.held_rows import distinct
from cortexgraph.agents.merge_ops import PROVENANCE_KEY
from cortexgraph.agents.restatement import Line, lines_of, refusal
from cortexgraph.storage.models import Memory

# Reasons that say "related, not the same": such pairs may become ``related`` links.
RESTATEMENT_REASONS = frozenset({"speakers", "sessions", "question"})
# The verdicts ``LinkGuard.reasons`` codes as small integers (0: may link).
_VERDICTS: tuple[str | None, ...] = (
    None,
    "merged before",
    "speakers",
    "question",
    "sessions",
    "numbers/names",
)
_MERGED, _SPEAKERS, _QUESTION, _SESSIONS, _DETAILS = range(1, 6)
# Times compared as float64 are compared exactly up to here (as Python compares them).
_EXACT_TIME = 2**53


def merged_at(memory: Memory) -> float | None:
    provenance = memory.meta.extra.get(PROVENANCE_KEY)
    return provenance.get("merged_at") if isinstance(provenance, dict) else None


def judged_by_merge(a: Memory, b: Memory) -> bool:
    """True when a merge already weighed these two: one is a merge, the other existed then."""
    for merged, other in ((a, b), (b, a)):
        at = merged_at(merged)
        if at is not None and other.created_at <= at:
            return True
    return False


@dataclass(frozen=True, slots=True)
class _Features:
    """What the first three guards read of each memory, as arrays by row."""

    merged_at: np.ndarray  # float64; NaN: not a merge
    created_at: np.ndarray  # float64
    speaker: np.ndarray  # a code per speaker; -1: not a transcript line
    asks: np.ndarray  # bool: a question under the guard's rule
    session: np.ndarray  # a code per session; -1: none
    words: np.ndarray  # a code per distinct tuple of the claim's words


def _codes(values: Sequence[Hashable | None]) -> np.ndarray:
    """Equal values, equal codes (None: -1)."""
    seen: dict[Hashable, int] = {}
    return np.array(
        [-1 if v is None else seen.setdefault(v, len(seen)) for v in values], dtype=np.int64
    )


class LinkGuard:
    """``reason(i, j)``: why memories i and j may not link, or None."""

    def __init__(
        self,
        memories: Sequence[Memory],
        *,
        details: bool = True,
        restatements: bool = True,
        questions: str = "most",
        names_min_overlap: float = 0.6,
        identifiers: bool = True,
        known: Iterable[Memory] | None = None,
    ) -> None:
        """``known``: the memories whose entities are the names a text can mention (default
        ``memories``); an incremental run's guard judges a neighbourhood with the whole
        store's names, as a full run does."""
        self.memories = memories
        self.lines: list[Line] = lines_of(memories)
        self.check_details = details
        self.restatements = restatements
        self.questions = questions
        self.overlap = names_min_overlap
        self._extractor = DetailExtractor(
            memories if known is None else known, identifiers=identifiers
        )
        # Read only for memories that reach a candidate pair (names: that numbers left).
        self._numbers: list[frozenset[str] | None] = [None] * len(memories)
        self._names: list[frozenset[str] | None] = [None] * len(memories)
        # When each merge was made (read once: a pair with a merge asked it of both sides).
        self._merged_at = {
            i: at for i, m in enumerate(memories) if (at := merged_at(m)) is not None
        }
        self._verdicts: dict[tuple[int, int], str | None] = {}
        self._features_made = False
        self._made: _Features | None = None

    def claims(self) -> list[str]:
        """What each memory says: the text whose similarity decides."""
        return [line.said.claim for line in self.lines]

    def reason(self, i: int, j: int) -> str | None:
        key = (i, j) if i < j else (j, i)
        if key in self._verdicts:
            return self._verdicts[key]
        verdict = self._judge(i, j)
        self._verdicts[key] = verdict
        return verdict

    def reasons(self, i: np.ndarray, j: np.ndarray) -> list[str | None]:
        """``reason`` of each pair (memories ``i[k]`` and ``j[k]``), in order: the same
        verdicts, each guard read for all the pairs at once."""
        features = self._features()
        if features is None:  # a merge time that is not a number: asked pair by pair
            return [self.reason(a, b) for a, b in zip(i.tolist(), j.tolist(), strict=True)]
        why = np.zeros(len(i), dtype=np.int8)
        if self._merged_at:
            merged, created = features.merged_at, features.created_at
            judged = (merged[i] >= created[j]) | (merged[j] >= created[i])
            why[judged] = _MERGED
        if self.restatements:
            open_ = why == 0
            speaker_i, speaker_j = features.speaker[i], features.speaker[j]
            two = open_ & (speaker_i >= 0) & (speaker_j >= 0) & (speaker_i != speaker_j)
            why[two] = _SPEAKERS
            open_ &= ~two
            asks = open_ & (features.asks[i] != features.asks[j])
            why[asks] = _QUESTION
            open_ &= ~asks
            session_i, session_j = features.session[i], features.session[j]
            days = open_ & (session_i >= 0) & (session_j >= 0) & (session_i != session_j)
            why[days & (features.words[i] != features.words[j])] = _SESSIONS
        if self.check_details:
            # Numbers first (as conflicts): names are read only for the pairs they leave.
            rest = np.flatnonzero(why == 0)
            for sets, overlap in ((self._number_sets, ANY_NUMBER), (self._name_sets, self.overlap)):
                ends = i[rest], j[rest]
                read = sets(distinct(np.concatenate(ends)).tolist()).__getitem__
                pairs = zip(map(read, ends[0].tolist()), map(read, ends[1].tolist()), strict=True)
                swapped = np.array(swapped_pairs(pairs, overlap), dtype=bool)
                why[rest[swapped]] = _DETAILS
                rest = rest[~swapped]
        return [_VERDICTS[w] for w in why.tolist()]

    def _features(self) -> _Features | None:
        """Each memory's features as arrays (made on first use); None when a merge time is
        not a number that float64 holds exactly (then ``reason`` answers as it always has)."""
        if self._features_made:
            return self._made
        self._features_made = True
        times = list(self._merged_at.values())
        if not all(type(t) in (int, float) for t in times):
            return None
        created = np.array([m.created_at for m in self.memories], dtype=np.int64)
        if len(created) and int(np.abs(created).max()) >= _EXACT_TIME:
            return None
        if any(type(t) is int and abs(t) >= _EXACT_TIME for t in times):
            return None
        merged = np.full(len(self.memories), np.nan)
        for k, at in self._merged_at.items():
            merged[k] = at
        lines = self.lines
        # Without a transcript line, no memory has a speaker or a session.
        spoken = any(line.said.speaker is not None for line in lines)
        unsaid = np.full(len(lines), -1, dtype=np.int64)
        self._made = _Features(
            merged_at=merged,
            created_at=created.astype(np.float64),
            speaker=_codes([line.said.speaker for line in lines]) if spoken else unsaid,
            asks=np.array([line.said.asks(self.questions) for line in lines], dtype=bool),
            session=_codes([line.session for line in lines]) if spoken else unsaid,
            words=_codes([line.said.words for line in lines]) if spoken else unsaid,
        )
        return self._made

    def refused(self, pairs: Sequence[tuple[int, int]]) -> Counter[str]:
        """How many of ``pairs`` each reason refused."""
        return Counter(r for i, j in pairs if (r := self.reason(i, j)) is not None)

    def _judge(self, i: int, j: int) -> str | None:
        merges = self._merged_at
        if (i in merges or j in merges) and self._judged_by_merge(i, j):
            return "merged before"
        if self.restatements:
            why = refusal(self.lines[i], self.lines[j], self.questions)
            if why is not None:
                return why
        if self.check_details and conflicts(self._detail(i), self._detail(j), self.overlap):
            return "numbers/names"
        return None

    def _judged_by_merge(self, i: int, j: int) -> bool:
        """``judged_by_merge`` of memories i and j, their merge times read once."""
        merges, memories = self._merged_at, self.memories
        for merged, other in ((i, j), (j, i)):
            at = merges.get(merged)
            if at is not None and memories[other].created_at <= at:
                return True
        return False

    def same_numbers(self, i: int, j: int) -> bool:
        """Both state numbers, and the same ones (agents.duplicates.agree)."""
        return agree(self._detail(i), self._detail(j))

    def _detail(self, i: int) -> Details:
        return Details(self._number_sets([i])[i], self._name_sets([i])[i])

    def _number_sets(self, rows: Iterable[int]) -> list[frozenset[str]]:
        """Each memory's numbers, read for ``rows`` if not yet (the others' may be unread)."""
        sets, lines = self._numbers, self.lines
        for k in rows:
            if sets[k] is None:
                sets[k] = numbers_in(lines[k].said.claim)
        return cast(list[frozenset[str]], sets)

    def _name_sets(self, rows: Iterable[int]) -> list[frozenset[str]]:
        """Each memory's names, read for ``rows`` if not yet (the others' may be unread)."""
        sets, lines, memories = self._names, self.lines, self.memories
        for k in rows:
            if sets[k] is None:
                sets[k] = self._extractor.names(memories[k], lines[k].said.claim)
        return cast(list[frozenset[str]], sets)


__all__ = ["RESTATEMENT_REASONS", "LinkGuard", "judged_by_merge", "merged_at"]
