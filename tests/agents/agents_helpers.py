"""Fakes for the agents' collaborators: deterministic, and obvious from agents/protocols.py."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from cortexgraph.agents.protocols import NoteRef
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.decay import DAY
from cortexgraph.storage.models import Memory, Relation

NOW = 1_760_000_000.0


class BagOfWordsEmbedder:
    """Hashes words into 256 dims: same words -> cosine 1; disjoint words -> about 0."""

    name = "bag-of-words-test"

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int(hashlib.md5(word.encode()).hexdigest(), 16)
                out[row, h % 256] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1
        return out / norms


class BrokenEmbedder:
    name = "broken"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError("model weights missing")


class RecordingSink:
    """A NoteSink that remembers what it was asked to write."""

    def __init__(self, fail_for: set[str] | None = None) -> None:
        self.notes: dict[str, str] = {}
        self.calls: list[tuple[str, int, str]] = []
        self.fail_for = fail_for or set()

    def write_note(
        self,
        memory: Memory,
        *,
        related: Sequence[Memory] = (),
        relations: Sequence[Relation] = (),
        reason: str = "",
        now: float,
    ) -> NoteRef:
        from cortexgraph.storage.errors import StorageError

        if memory.id in self.fail_for:
            raise StorageError(f"disk full writing {memory.id}")
        self.calls.append((memory.id, len(related), reason))
        path = f"cortexgraph/{memory.id}.md"
        created = path not in self.notes
        self.notes[path] = memory.content
        return NoteRef(memory.id, path, created)


def add(
    store: InMemoryStore,
    content: str,
    *,
    age_days: float = 0.0,
    used_days_ago: float | None = None,
    use_count: int = 0,
    strength: float = 1.0,
    tags=(),
    entities=(),
    extra=None,
) -> Memory:
    """A memory created ``age_days`` ago and last used ``used_days_ago`` (default: at creation)."""
    m = store.save(
        content,
        tags=tags,
        entities=entities,
        strength=strength,
        extra=extra,
        now=NOW - age_days * DAY,
    )
    last = NOW - (age_days if used_days_ago is None else used_days_ago) * DAY
    return store.update(m.id, use_count=use_count, last_used=int(last))
