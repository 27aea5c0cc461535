"""Which pairs of memories the cluster detector may link, and why not the others.

Three guards, each a reason a pair is never one fact said twice, whatever its similarity:

- ``merged before``: one is a merge and the other existed then. A merged memory states the
  union of its sources' details, so the other guards would judge it more leniently than its
  sources; re-deciding an old pair on every run would snowball.
- ``numbers/names``: swapped numbers or names (agents.duplicates), read from what the memory
  says (a transcript line's date stamp is not a number it states).
- ``speakers`` / ``sessions`` / ``question``: the restatement rule (agents.restatement).

A verdict is asked again and again as groups grow; each pair is judged once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from cortexgraph.agents.duplicates import DetailExtractor, Details, agree, conflicts
from cortexgraph.agents.merge_ops import PROVENANCE_KEY
from cortexgraph.agents.restatement import Line, line_of, refusal
from cortexgraph.storage.models import Memory

# Reasons that say "related, not the same": such pairs may become ``related`` links.
RESTATEMENT_REASONS = frozenset({"speakers", "sessions", "question"})


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
        self.lines: list[Line] = [line_of(m) for m in memories]
        self.check_details = details
        self.restatements = restatements
        self.questions = questions
        self.overlap = names_min_overlap
        self._extractor = DetailExtractor(
            memories if known is None else known, identifiers=identifiers
        )
        # Filled only for memories that reach a candidate pair.
        self._details: list[Details | None] = [None] * len(memories)
        # When each merge was made (read once: a pair with a merge asked it of both sides).
        self._merged_at = {
            i: at for i, m in enumerate(memories) if (at := merged_at(m)) is not None
        }
        self._verdicts: dict[tuple[int, int], str | None] = {}

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
        got = self._details[i]
        if got is None:
            got = self._details[i] = self._extractor.details(
                self.memories[i], self.lines[i].said.claim
            )
        return got


__all__ = ["RESTATEMENT_REASONS", "LinkGuard", "judged_by_merge", "merged_at"]
