"""The labelled intent data shipped in ``activation/data`` and its deterministic split.

Training messages live one per line in ``data/intents/<label>.txt``; the evaluation set
(``data/eval_set.txt``) is separate and never trained on. The held-out split of the training
data is chosen by a hash of each message, so it does not depend on file order.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

DATA_DIR = Path(__file__).parent / "data"
INTENTS_DIR = DATA_DIR / "intents"
EVAL_FILE = DATA_DIR / "eval_set.txt"
HELD_OUT_BUCKETS = 5  # 1 in 5 messages is held out


class Intent(StrEnum):
    SAVE_PREFERENCE = "SAVE_PREFERENCE"
    SAVE_DECISION = "SAVE_DECISION"
    SAVE_FACT = "SAVE_FACT"
    RECALL_INFO = "RECALL_INFO"
    UPDATE_INFO = "UPDATE_INFO"
    QUESTION = "QUESTION"
    OTHER = "OTHER"  # greetings, thanks, small talk, plain task instructions

    @property
    def is_save(self) -> bool:
        return self in _SAVE_INTENTS

    @property
    def is_recall(self) -> bool:
        return self is Intent.RECALL_INFO


_SAVE_INTENTS = frozenset(
    {Intent.SAVE_PREFERENCE, Intent.SAVE_DECISION, Intent.SAVE_FACT, Intent.UPDATE_INFO}
)


@dataclass(frozen=True, slots=True)
class LabelledMessage:
    text: str
    intent: Intent
    entities: tuple[str, ...] = ()

    @property
    def should_save(self) -> bool:
        return self.intent.is_save

    @property
    def should_search(self) -> bool:
        return self.intent.is_recall


def _lines(path: Path) -> list[str]:
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def load_training_set(directory: Path = INTENTS_DIR) -> list[LabelledMessage]:
    """Every training message, ordered by label then file order."""
    out: list[LabelledMessage] = []
    for intent in Intent:
        path = directory / f"{intent.value.lower()}.txt"
        out.extend(LabelledMessage(text, intent) for text in _lines(path))
    return out


def load_eval_set(path: Path = EVAL_FILE) -> list[LabelledMessage]:
    """``INTENT | entity; entity | message`` lines."""
    out = []
    for line in _lines(path):
        intent, entities, text = (part.strip() for part in line.split("|", 2))
        ents = tuple(e.strip() for e in entities.split(";") if e.strip())
        out.append(LabelledMessage(text, Intent(intent), ents))
    return out


FOLLOWUPS_FILE = DATA_DIR / "followups.txt"


@dataclass(frozen=True, slots=True)
class LabelledFollowUp:
    """A short follow-up whose meaning is in the earlier user turns."""

    gold: str  # "SAVE", "NONE" or "SEARCH"
    earlier: tuple[str, ...]
    message: str
    topic: tuple[str, ...] = ()  # for SEARCH: words the suggested query must contain


def load_followups(path: Path = FOLLOWUPS_FILE) -> list[LabelledFollowUp]:
    """``GOLD | turn >> turn | message`` lines (GOLD: SAVE, NONE or SEARCH:<topic words>)."""
    out = []
    for line in _lines(path):
        gold, earlier, message = (part.strip() for part in line.split("|", 2))
        kind, _, topic = gold.partition(":")
        out.append(
            LabelledFollowUp(
                kind, tuple(t.strip() for t in earlier.split(">>")), message, tuple(topic.split())
            )
        )
    return out


def is_held_out(text: str) -> bool:
    digest = hashlib.blake2b(text.strip().lower().encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % HELD_OUT_BUCKETS == 0


def split(messages: list[LabelledMessage]) -> tuple[list[LabelledMessage], list[LabelledMessage]]:
    """(train, held_out) by message hash."""
    train = [m for m in messages if not is_held_out(m.text)]
    held = [m for m in messages if is_held_out(m.text)]
    return train, held


def data_fingerprint(messages: list[LabelledMessage]) -> str:
    """Changes whenever a training message or label changes (stored in the artefact)."""
    h = hashlib.blake2b(digest_size=16)
    for m in messages:
        h.update(f"{m.intent.value}\t{m.text}\n".encode())
    return h.hexdigest()


__all__ = [
    "DATA_DIR",
    "EVAL_FILE",
    "FOLLOWUPS_FILE",
    "INTENTS_DIR",
    "Intent",
    "LabelledFollowUp",
    "LabelledMessage",
    "data_fingerprint",
    "is_held_out",
    "load_eval_set",
    "load_followups",
    "load_training_set",
    "split",
]
