"""Candidate pairs for cluster detection from a cheap model, checked by the real one.

A static model (storage/static_embedder.py, distilled from MiniLM with model2vec) embeds every
text in a few milliseconds per thousand; its neighbour search at a lower bar
(``candidate_threshold``), each text's ``candidate_per_row`` strongest, names the pairs worth
checking. Only the texts in those pairs are embedded with MiniLM, and only pairs whose MiniLM
cosine reaches the link threshold survive, so every link and every cohesion is MiniLM's, as
without candidates. What can differ: a pair MiniLM would link that the static model ranks
below the bar (bench/embed_bench.py ``--cluster`` prints the merge P/R both ways).

Any failure of the static model returns None: the detector then finds pairs with MiniLM alone
(the fallback; the report's neighbour method says which ran).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from cortexgraph.agents.neighbours import NeighbourPairs, radius_pairs
from cortexgraph.agents.protocols import Embedder
from cortexgraph.agents.vectors import TextVectors

log = logging.getLogger(__name__)


def checked_candidates(
    texts: Sequence[str],
    candidates: Embedder,
    embedder: Embedder,
    *,
    candidate_threshold: float,
    candidate_per_row: int,
    link_threshold: float,
    exact_limit: int,
) -> tuple[TextVectors, NeighbourPairs] | None:
    """MiniLM vectors of the texts in candidate pairs (zero rows for the rest) and the pairs
    whose MiniLM cosine reaches ``link_threshold``; None when the static model fails."""
    try:
        static = np.asarray(candidates.embed(list(texts)), dtype=np.float32)
    except Exception as exc:  # any failure: the caller searches with MiniLM itself
        log.warning("candidate model %s unavailable (%s); pairs by MiniLM", candidates.name, exc)
        return None
    found = radius_pairs(
        static, candidate_threshold, exact_limit=exact_limit, max_per_row=candidate_per_row
    )
    involved = np.unique(np.concatenate([found.i, found.j]))
    vecs = np.asarray(embedder.embed([texts[x] for x in involved.tolist()]), dtype=np.float32)
    width = vecs.shape[1] if vecs.ndim == 2 and len(vecs) else 1
    dense = np.zeros((len(texts), width), dtype=np.float32)
    if len(involved):
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        dense[involved] = vecs / norms
    vectors = TextVectors(f"embeddings:{embedder.name}", dense)
    sim = vectors.pair_similarity(found.i, found.j).astype(np.float32)
    keep = sim >= link_threshold
    method = (
        f"candidates by {candidates.name} ({found.method}, cos >= {candidate_threshold}, "
        f"{candidate_per_row}/memory), {len(found):,} checked by {embedder.name}"
    )
    return vectors, NeighbourPairs(found.i[keep], found.j[keep], sim[keep], method, found.compared)


__all__ = ["checked_candidates"]
