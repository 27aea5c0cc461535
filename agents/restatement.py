"""What can make two memories one fact said twice (a restatement), read from how people talk.

A memory saved from a conversation is a transcript line: an optional date stamp, the speaker,
then what was said: ``[1:56 pm on 8 May, 2023] Caroline: I went to a support group
yesterday.`` A merge keeps one memory for a claim said again, so it may only join lines that
could state the same claim:

- **one speaker**: another speaker's line is a reply, an answer or an agreement, a claim of
  its own (both lines must name a speaker for this to apply);
- **one session**: lines stamped with different dates (or, unstamped, saved on different days)
  describe different days: "yesterday", "next month", "thanks for ..." point at that day's
  things. Only the same words said again (case, punctuation and spacing aside) join across
  sessions. A memory that is not a transcript line (a fact an assistant noted) has no session:
  the same fact noted on two days is the restatement a merge exists for;
- **a question only with a question**: asking about something does not state it.

Whether two lines that pass these say the *same* thing is the similarity of what was said
(``claim_text``: the line without its stamp and speaker, which would otherwise make every two
lines of one session look alike), decided by the cluster detector (agents.cluster_detector).
The labelled pairs in tests/fixtures/locomo_restatements and bench/restatement_bench.py
measure the rule.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from cortexgraph.storage.bulk_records import dataclass_instances
from cortexgraph.storage.models import Memory

# "[1:56 pm on 8 May, 2023] " at the start of a line.
_STAMP = re.compile(r"^\s*\[([^\]\n]{1,80})\]\s*")
# "Caroline: ", "Dr. Haas: ", "Mary Jane Watson: " (up to three capitalised words).
_SPEAKER = re.compile(
    r"^((?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+)?[A-Z][\w'.-]{0,40}(?:\s[A-Z][\w'.-]{0,40}){0,2}):\s+(?=\S)"
)
# Labels that open a note like a speaker does, but are not one ("Note: ...", "Update: ...").
_NOT_SPEAKERS = frozenset(
    """note update correction reminder important todo fyi decision summary answer question
    edit ps warning error info debug fixed done re subject context project status result
    goal plan idea tip problem solution fix issue reason why""".split()
)
# A photo shared with the line ("[shares a photo: ...]") is not what was said.
_TRAILING_BRACKET = re.compile(r"\s*\[[^\]\n]*\]\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORDS = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Utterance:
    """A memory's text read as a transcript line (``speaker`` None: not one)."""

    stamp: str | None  # the date stamp as written, lowercased
    speaker: str | None  # lowercased
    claim: str  # what was said: the text without stamp and speaker
    ends_in_question: bool  # its last sentence asks
    mostly_questions: bool  # more of its sentences ask than state
    # The claim's words, lowercased, for "the same words" across sessions: a transcript
    # line's (one with a speaker: only those have a session), else ().
    words: tuple[str, ...]

    def asks(self, rule: str) -> bool:
        """Whether this counts as a question under ``rule`` ("last", "most" or "off")."""
        if rule == "last":
            return self.ends_in_question
        if rule == "most":
            return self.mostly_questions
        return False


def utterance(text: str) -> Utterance:
    return Utterance(*_said(text))


# Utterance's fields in order, as ``_said`` gives them.
_SaidFields = tuple[str | None, str | None, str, bool, bool, tuple[str, ...]]


def _said(text: str) -> _SaidFields:
    """``utterance``'s fields, in order."""
    rest = text
    stamp = None
    m = _STAMP.match(rest)
    if m is not None:
        stamp = " ".join(m.group(1).lower().split())
        rest = rest[m.end() :]
    speaker = None
    s = _SPEAKER.match(rest) if ":" in rest else None  # a speaker is followed by a colon
    if s is not None and s.group(1).lower() not in _NOT_SPEAKERS:
        speaker = " ".join(s.group(1).lower().split())
        rest = rest[s.end() :]
    claim = rest.strip() or text.strip()
    ends_in_question = mostly_questions = False
    if "?" in claim:  # without one, no sentence asks: the split is not needed
        sentences = [x for x in _SENTENCE_END.split(_TRAILING_BRACKET.sub("", claim).strip()) if x]
        asked = sum(x.endswith("?") for x in sentences)
        ends_in_question = bool(sentences) and sentences[-1].endswith("?")
        mostly_questions = asked > len(sentences) - asked
    # One string per distinct word, not per occurrence: a run holds every active memory's line
    # at once (15 MB of word strings at 10k memories, a few hundred KB interned). Only a
    # transcript line has a session, so only its words are ever compared.
    words = () if speaker is None else tuple(map(sys.intern, map(str.lower, _WORDS.findall(claim))))
    return stamp, speaker, claim, ends_in_question, mostly_questions, words


def claim_text(text: str) -> str:
    """What a memory says, without a transcript line's date stamp and speaker."""
    return utterance(text).claim


def _session(memory: Memory, said: Utterance) -> str | None:
    """A transcript line's session: its date stamp, else the UTC day it was saved on."""
    if said.speaker is None:
        return None
    if said.stamp is not None:
        return said.stamp
    return datetime.fromtimestamp(memory.created_at, UTC).date().isoformat()


@dataclass(frozen=True, slots=True)
class Line:
    """What the restatement rule needs of one memory."""

    said: Utterance
    session: str | None


def line_of(memory: Memory) -> Line:
    said = utterance(memory.content)
    return Line(said, _session(memory, said))


def lines_of(memories: Sequence[Memory]) -> list[Line]:
    """``line_of`` of each memory, the lines and their utterances built in bulk
    (storage.bulk_records): a frozen dataclass's ``__init__`` was half of reading a line
    (~1.5 of 3 us; 2,142 lines a 10k incremental cluster step, every active memory's in a
    full run)."""
    n = len(memories)
    said = [_said(m.content) for m in memories]
    fields = list(zip(*said, strict=True)) if said else [()] * 6
    utterances = dataclass_instances(
        Utterance,
        n,
        stamp=fields[0],
        speaker=fields[1],
        claim=fields[2],
        ends_in_question=fields[3],
        mostly_questions=fields[4],
        words=fields[5],
    )
    sessions = [_session(m, u) for m, u in zip(memories, utterances, strict=True)]
    return dataclass_instances(Line, n, said=utterances, session=sessions)


def refusal(a: Line, b: Line, questions: str = "most") -> str | None:
    """Why ``a`` and ``b`` cannot be one claim said twice ("speakers", "sessions",
    "question"), or None when the similarity of what they say decides. ``questions``: which
    lines count as questions (``Utterance.asks``)."""
    speakers = a.said.speaker, b.said.speaker
    if None not in speakers and speakers[0] != speakers[1]:
        return "speakers"
    if a.said.asks(questions) != b.said.asks(questions):
        return "question"
    sessions = a.session, b.session
    if None not in sessions and sessions[0] != sessions[1] and a.said.words != b.said.words:
        return "sessions"
    return None


__all__ = ["Line", "Utterance", "claim_text", "line_of", "lines_of", "refusal", "utterance"]
