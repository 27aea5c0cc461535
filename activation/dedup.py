"""Before a save: the nearest existing memories, and whether the new text duplicates one.

Candidates come from the store's own search (BM25, fused with embeddings when the store has
them); each is then scored by cosine similarity of MiniLM embeddings. Without the model the
score is the Jaccard overlap of content words (``method="lexical"``), which only flags
near-verbatim repeats.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from cortexgraph.storage.embeddings import Embedder, EmbeddingCache
from cortexgraph.storage.protocol import MemoryStore
from cortexgraph.storage.text_index import tokenize


class DuplicateAction(StrEnum):
    MERGE = "MERGE"  # above the merge threshold: the same memory again
    REVIEW = "REVIEW"  # above the duplicate threshold: probably the same, let a human look
    NONE = "NONE"


@dataclass(frozen=True, slots=True)
class SimilarMemory:
    memory_id: str
    similarity: float
    preview: str


@dataclass(frozen=True, slots=True)
class DeduplicationResult:
    is_duplicate: bool
    recommendation: DuplicateAction
    best: SimilarMemory | None
    similar: tuple[SimilarMemory, ...]
    method: str  # "embedding", "lexical" or "no-store"

    def to_json(self) -> dict[str, Any]:
        best = self.best
        return {
            "is_duplicate": self.is_duplicate,
            "recommendation": self.recommendation.value,
            # the activation spec's names for the nearest memory and its similarity
            "similar_memory": {"id": best.memory_id, "content": best.preview} if best else None,
            "similarity_score": round(best.similarity, 4) if best else None,
            "method": self.method,
            "similar": [
                {
                    "memory_id": s.memory_id,
                    "similarity": round(s.similarity, 4),
                    "preview": s.preview,
                }
                for s in self.similar
            ],
        }


NO_DUPLICATE = DeduplicationResult(False, DuplicateAction.NONE, None, (), "no-store")


class DeduplicationChecker:
    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        threshold: float = 0.85,
        merge_threshold: float = 0.90,
        candidates: int = 10,
    ) -> None:
        if not 0.0 <= threshold <= merge_threshold <= 1.0:
            raise ValueError("need 0 <= threshold <= merge_threshold <= 1")
        self.threshold = threshold
        self.merge_threshold = merge_threshold
        self.candidates = candidates
        self._cache = EmbeddingCache(embedder) if embedder is not None else None

    def check(
        self, content: str, store: MemoryStore | None, *, vector: np.ndarray | None = None
    ) -> DeduplicationResult:
        if store is None:
            return NO_DUPLICATE
        found = store.search(content, top_k=self.candidates)
        memories = [r.memory for r in found]
        if not memories:
            method = "embedding" if self._cache is not None else "lexical"
            return DeduplicationResult(False, DuplicateAction.NONE, None, (), method)
        if self._cache is not None:
            q = vector if vector is not None else self._cache.embed([content])[0]
            sims = self._cache.embed([m.content for m in memories]) @ np.asarray(q).ravel()
            method = "embedding"
        else:
            words = set(tokenize(content))
            sims = np.array([_jaccard(words, set(tokenize(m.content))) for m in memories])
            method = "lexical"
        ranked = sorted(
            (
                SimilarMemory(m.id, float(min(1.0, s)), m.content[:120])
                for m, s in zip(memories, sims, strict=True)
            ),
            key=lambda s: -s.similarity,
        )
        best = ranked[0]
        if best.similarity > self.merge_threshold:
            action = DuplicateAction.MERGE
        elif best.similarity >= self.threshold:
            action = DuplicateAction.REVIEW
        else:
            action = DuplicateAction.NONE
        return DeduplicationResult(
            action is not DuplicateAction.NONE, action, best, tuple(ranked[:3]), method
        )


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


__all__ = [
    "NO_DUPLICATE",
    "DeduplicationChecker",
    "DeduplicationResult",
    "DuplicateAction",
    "SimilarMemory",
]
