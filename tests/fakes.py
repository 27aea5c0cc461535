"""The fakes every test folder shares: a hashing embedder, a broken one, a recording note sink.

Imported as ``from fakes import ...`` (pytest puts tests/ on the path, as for mcp_common.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import numpy as np

from cortexgraph.agents.protocols import NoteRef
from cortexgraph.storage.embeddings import EmbeddingUnavailableError
from cortexgraph.storage.errors import StorageError
from cortexgraph.storage.models import Memory, Relation
from cortexgraph.storage.text_index import tokenize


class HashingEmbedder:
    """Bag of stemmed words hashed into ``dims`` dims: deterministic, instant, no model.

    Texts sharing words are close; texts sharing none are about orthogonal. ``synonyms`` maps
    terms the fake model "knows" mean the same, so dense can match what BM25 cannot. ``calls``
    counts embed() calls and ``texts`` lists every text embedded, in order.
    """

    def __init__(
        self,
        dims: int = 384,
        *,
        name: str = "hashing-test",
        synonyms: Mapping[str, str] | None = None,
    ) -> None:
        self.name, self.dims = name, dims
        self.synonyms = dict(synonyms or {})
        self.calls = 0
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in tokenize(text):
                term = self.synonyms.get(term, term)
                h = int.from_bytes(hashlib.blake2b(term.encode(), digest_size=4).digest(), "big")
                out[row, h % self.dims] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


class BrokenEmbedder:
    """An embedder whose model cannot load: every call raises ``error``."""

    name = "broken"

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error or EmbeddingUnavailableError("model package not installed (test)")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise self.error


class RecordingSink:
    """A NoteSink that remembers what it was asked to write (and fails for ``fail_for`` ids)."""

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
        if memory.id in self.fail_for:
            raise StorageError(f"disk full writing {memory.id}")
        self.calls.append((memory.id, len(related), reason))
        path = f"cortexgraph/{memory.id}.md"
        created = path not in self.notes
        self.notes[path] = memory.content
        return NoteRef(memory.id, path, created)
