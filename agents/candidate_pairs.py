"""Candidate pairs for cluster detection, found cheaply, then checked on each text's own vector.

Finding: a static model (storage/static_embedder.py, distilled from MiniLM with model2vec)
embeds every text in a few milliseconds per thousand; its neighbour search at a lower bar
(``candidate_threshold``), each text's ``candidate_per_row`` strongest, names the pairs worth
checking. Without it, MiniLM's own vectors of every text, embedded in batches, find the pairs
at ``margin`` below the link bar.

Checking: a model may give a text a vector that moves with its batchmates. The int8 graph,
the default embedder up to 2.0, quantised its activations per batch: a pair's cosine moved by
up to 0.064 when the same 419 turns were embedded in another order, and which memories merged
changed from run to run (38 merges, then 42). So every text in a candidate pair is embedded
again *on its own* (``embed_each``), and only those vectors decide links and cohesions: a
decision depends on the two texts alone, never on batch order or on what a background
embedder has embedded. (An ``EmbeddingCache`` handed in as the embedder answers with the
vector it holds, the first one made for the text: with a batch-independent model, as the fp32
default is, that is the text's own vector. So it is asked once for all the texts.)

Any failure of the static model returns None: the detector then finds pairs with MiniLM alone
(the fallback; the report's neighbour method says which ran).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from cortexgraph.agents.held_rows import distinct, stacked_rows
from cortexgraph.agents.neighbours import NeighbourPairs, radius_pairs
from cortexgraph.agents.protocols import Embedder
from cortexgraph.agents.vectors import TextVectors, similarity_method

log = logging.getLogger(__name__)


def embed_each(texts: Sequence[str], embedder: Embedder) -> np.ndarray:
    """L2-normalised rows, each text's own vector (a distinct text once).

    An embedder that holds its vectors (``held``: an ``EmbeddingCache``) is asked once for
    all of them: it answers a text with the vector it holds whatever is asked beside it, and
    embeds the ones it lacks together, which gives each the vector it gets alone where the
    model is batch-independent (the fp32 default gave the same bits for 100 texts of 1 to 80
    words). A bare model is asked text by text: its vectors may move with their batchmates
    (the int8 ablation's did)."""
    wanted = sorted(set(texts))
    held = getattr(embedder, "held", None)
    if held is not None:
        found: list[np.ndarray] = held(wanted)
    else:
        found = [np.asarray(embedder.embed([text]), dtype=np.float32) for text in wanted]
    if not wanted:
        return np.zeros((0, 1), dtype=np.float32)
    row_of = {text: k for k, text in enumerate(wanted)}
    return normalised_rows(found)[[row_of[t] for t in texts]]


def normalised_rows(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """Each vector as a float32 row, L2-normalised alone (a zero row as it is), stacked.

    Bit for bit ``vec / float(np.linalg.norm(vec))`` of each: that norm is the square root
    of the float32 ``vec.dot(vec)``, the dot product numpy's matmul takes for a 1 x d by
    d x 1 pair too, so all the norms come from one stacked matmul (a vector at a time, its
    Python-level calls were ~5 us a vector)."""
    stacked = stacked_rows([np.asarray(v).reshape(-1) for v in vectors])
    norms = np.sqrt((stacked[:, None, :] @ stacked[:, :, None]).reshape(-1))
    positive = norms > 0
    stacked[positive] /= norms[positive, None]
    return stacked


class OwnVectors:
    """Each text's own vector (``embed_each``), embedded when a pair first needs it; a zero
    row for a text no pair asked about. ``held``: each text's vector as the embedder holds
    it (agents.vectors.held_vectors), which is what ``embed_each`` would be answered: read,
    the cache not asked again (a lookup of each text and a look at its files each round)."""

    def __init__(
        self, texts: Sequence[str], embedder: Embedder, held: Sequence[np.ndarray] | None = None
    ) -> None:
        self.texts, self.embedder, self.held = texts, embedder, held
        self.dense = np.zeros((len(texts), 1), dtype=np.float32)
        self.done = np.zeros(len(texts), dtype=bool)

    def similarity(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """The cosine of pairs (i[k], j[k]) on their texts' own vectors."""
        need = distinct(np.concatenate([i, j])).astype(np.int64)
        need = need[~self.done[need]]
        if len(need):
            if self.held is not None:
                vecs = normalised_rows([self.held[x] for x in need.tolist()])
            else:
                vecs = embed_each([self.texts[x] for x in need.tolist()], self.embedder)
            if self.dense.shape[1] != vecs.shape[1] and not self.done.any():
                self.dense = np.zeros((len(self.texts), vecs.shape[1]), dtype=np.float32)
            self.dense[need] = vecs
            self.done[need] = True
        return self.vectors().pair_similarity(i, j).astype(np.float32)

    def vectors(self) -> TextVectors:
        return TextVectors(similarity_method(self.embedder), self.dense)


def checked(
    texts: Sequence[str],
    found: NeighbourPairs,
    embedder: Embedder,
    *,
    link_threshold: float,
    method: str,
) -> tuple[TextVectors, NeighbourPairs]:
    """Vectors of the texts in ``found``'s pairs, each embedded on its own (zero rows for the
    rest), and the pairs whose cosine on them reaches ``link_threshold``."""
    own = OwnVectors(texts, embedder)
    sim = own.similarity(found.i, found.j)
    keep = sim >= link_threshold
    pairs = NeighbourPairs(found.i[keep], found.j[keep], sim[keep], method, found.compared)
    return own.vectors(), pairs


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
    """The static model's candidate pairs checked on MiniLM vectors (``checked``); None when
    the static model fails."""
    try:
        static = np.asarray(candidates.embed(list(texts)), dtype=np.float32)
    except Exception as exc:  # any failure: the caller searches with MiniLM itself
        log.warning("candidate model %s unavailable (%s); pairs by MiniLM", candidates.name, exc)
        return None
    found = radius_pairs(
        static, candidate_threshold, exact_limit=exact_limit, max_per_row=candidate_per_row
    )
    method = (
        f"candidates by {candidates.name} ({found.method}, cos >= {candidate_threshold}, "
        f"{candidate_per_row}/memory), {len(found):,} checked by {embedder.name} text by text"
    )
    return checked(texts, found, embedder, link_threshold=link_threshold, method=method)


__all__ = ["OwnVectors", "checked", "checked_candidates", "embed_each"]
