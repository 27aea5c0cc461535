"""A bounded buffer of recent messages per session, so short follow-ups keep their meaning."""

from __future__ import annotations

import re
import threading
from collections import deque
from dataclasses import dataclass

_FOLLOW_UP = re.compile(
    r"^\s*(?:yes|yeah|yep|sure|ok(?:ay)?|exactly|right|correct|agreed|definitely|please|"
    r"do (?:that|it|this)|go (?:ahead|with (?:that|it|this))|that one|the (?:first|second|"
    r"last) one|sounds good|let'?s do (?:that|it)|same here|me too|that'?s right)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Turn:
    role: str  # "user" or "assistant"
    text: str


# "and for the cache?", "what about staging?": the same question about another topic.
_SAME_AGAIN = re.compile(
    r"^\s*(?:and|also|what about|how about|same (?:for|with)|and what about|and how about)\b",
    re.IGNORECASE,
)


def is_follow_up(message: str) -> bool:
    """Short replies whose meaning lives in the previous turns ("yes, do that", "and for the
    cache?")."""
    words = message.split()
    short = len(words) <= 6
    return (
        (short and bool(_FOLLOW_UP.match(message)))
        or (short and bool(_SAME_AGAIN.match(message)))
        or len(words) <= 2
    )


def is_question(message: str) -> bool:
    """A message that asks (ends with a question mark)."""
    return message.rstrip().endswith("?")


class ConversationContext:
    """Thread-safe; keeps the last ``max_turns`` turns of each session (oldest dropped)."""

    def __init__(self, max_turns: int = 6, max_sessions: int = 1000) -> None:
        if max_turns < 1:
            raise ValueError("max_turns must be >= 1")
        self.max_turns = max_turns
        self.max_sessions = max_sessions
        self._lock = threading.Lock()
        self._sessions: dict[str, deque[Turn]] = {}

    def add(self, text: str, *, session_id: str = "default", role: str = "user") -> None:
        with self._lock:
            turns = self._sessions.pop(session_id, None) or deque(maxlen=self.max_turns)
            turns.append(Turn(role, text))
            self._sessions[session_id] = turns  # re-inserted: dict order is recency
            while len(self._sessions) > self.max_sessions:
                del self._sessions[next(iter(self._sessions))]

    def turns(self, session_id: str = "default") -> tuple[Turn, ...]:
        with self._lock:
            return tuple(self._sessions.get(session_id, ()))

    def clear(self, session_id: str | None = None) -> None:
        with self._lock:
            if session_id is None:
                self._sessions.clear()
            else:
                self._sessions.pop(session_id, None)

    def window(self, message: str, *, session_id: str = "default", turns: int = 3) -> str:
        """The last ``turns`` user messages before ``message``, joined with it."""
        previous = [t.text for t in self.turns(session_id) if t.role == "user"]
        if previous and previous[-1] == message:
            previous = previous[:-1]
        return " ".join([*previous[-turns:], message]).strip()


__all__ = ["ConversationContext", "Turn", "is_follow_up", "is_question"]
