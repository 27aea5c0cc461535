"""Summary memories (memory_compress): which memories a summary covers, the extractive summary,
and the summary memory itself with its ``consolidated_from`` links to its sources.

A summary replaces nothing: its sources stay and it is ranked like any memory. Who writes the
text (the client's model through MCP sampling, or ``extractive_summary``) is the shell's choice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from cortexgraph.agents.protocols import Embedder
from cortexgraph.storage.decay import DAY
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore

SUMMARY_TAG = "summary"
MAX_SOURCES = 500  # the newest memories of a long period; the rest stay unsummarised this time
MAX_ENTITIES = 12


def period_memories(store: MemoryStore, days: float, now: float) -> list[Memory]:
    """The memories created in the last ``days`` that are not archived."""
    since = now - days * DAY
    return [
        m for m in store.list() if m.created_at >= since and m.status is not MemoryStatus.ARCHIVED
    ]


def summary_scope(memory: Memory) -> str | None:
    """The scope of the summary ``memory`` is ("session", "epoch"), or None if it is none."""
    info = memory.meta.extra.get("summary")
    scope = info.get("scope") if isinstance(info, dict) else None
    return scope if isinstance(scope, str) else None


def summary_sources(memories: Iterable[Memory], scope: str) -> list[Memory]:
    """What a ``scope`` summary covers, oldest first: never an earlier summary of the same
    scope, and at most the newest ``MAX_SOURCES``."""
    chosen = [m for m in memories if summary_scope(m) != scope]
    chosen.sort(key=lambda m: (m.created_at, m.id))
    return chosen[-MAX_SOURCES:]


def extractive_summary(texts: Sequence[str], embedder: Embedder | None, max_sentences: int) -> str:
    """The sentences closest to the centroid of all sentences (by embedding, or TF-IDF), in
    their original order."""
    # numpy and the vectors load here, not at import: the MCP server imports this at start-up.
    import numpy as np

    from cortexgraph.agents.sentences import split_sentences
    from cortexgraph.agents.vectors import vectorize

    sentences: list[str] = []
    for text in texts:
        for s in split_sentences(text):
            if s not in sentences:
                sentences.append(s)
    if len(sentences) <= max_sentences:
        return " ".join(sentences)
    vectors = vectorize(sentences, embedder)
    if vectors.sparse is not None and not vectors.is_semantic:
        centroid = np.asarray(vectors.sparse.mean(axis=0)).ravel()
        scores = np.asarray(vectors.sparse @ centroid).ravel()
    else:
        scores = vectors.dense @ vectors.dense.mean(axis=0)
    chosen = sorted(np.argsort(-scores, kind="stable")[:max_sentences].tolist())
    return " ".join(sentences[i] for i in chosen)


def save_summary(
    store: MemoryStore, text: str, sources: Sequence[Memory], *, scope: str, method: str
) -> Memory:
    """The summary memory of ``sources`` (oldest first, not empty), linked to each by
    ``consolidated_from``; its entities are the sources' most frequent ones."""
    entities = Counter(e for m in sources for e in m.entities).most_common(MAX_ENTITIES)
    summary = store.save(
        text,
        tags=[SUMMARY_TAG, f"{SUMMARY_TAG}:{scope}"],
        entities=[e for e, _ in entities],
        source="memory_compress",
        context=f"{scope} summary of {len(sources)} memories",
        extra={
            "summary": {
                "scope": scope,
                "method": method,
                "sources": len(sources),
                "from": sources[0].created_at,
                "to": sources[-1].created_at,
            }
        },
    )
    for m in sources:
        store.add_relation(
            summary.id,
            m.id,
            "consolidated_from",
            strength=1.0,
            metadata={"by": "memory_compress", "scope": scope},
        )
    return summary


__all__ = [
    "MAX_SOURCES",
    "SUMMARY_TAG",
    "extractive_summary",
    "period_memories",
    "save_summary",
    "summary_scope",
    "summary_sources",
]
