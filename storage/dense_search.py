"""The dense side of a search: the dense index's rows kept in step with the store, and the
cosines of a query with its nearest memories and its lexical hits (storage.search fuses them).

A store's dense scorer is a ``DenseIndex`` (rows kept in step with the store's change journal,
a query one matrix-vector product) or a plain ``DenseScorer`` given the memories each time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cortexgraph.storage.protocol import DenseIndex

if TYPE_CHECKING:
    from cortexgraph.storage.protocol import DenseScorer
    from cortexgraph.storage.search import SearchableStore

# With a background embedder (the MCP server's), a search embeds at most SEARCH_EMBED_LIMIT of
# the memories the embedding cache does not hold yet, its best lexical hits first; the rest
# rank by BM25 alone until the background embedder has them. Past SEARCH_BACKLOG_LIMIT (a store
# opened without its cache) it embeds none. A saved turn with its context is ~100 tokens,
# ~15 ms of MiniLM on one core. LoCoMo dev through MCP right after each conversation's saves
# (one run each, load 3-4): limit 32 R@5 0.697, first search 1.01 s; 16: 0.696, 0.55 s;
# 8: 0.697, 0.30 s; 4: 0.685, 0.17 s. Which turns those first questions rank by BM25 alone
# depends on how far the background embedder got: about half of the bench's run-to-run spread
# (0.700-0.707; 0.709 asked once all is embedded, docs/retrieval.md). The MCP server's search
# waits for the embedder's rows instead when it would be done within
# CORTEXGRAPH_SEARCH_EMBEDDING_WAIT_S (a few saves), not for a burst's backlog (35-80 s under
# load there: R@5 unchanged, 0.703/0.704 against 0.700/0.704).
SEARCH_EMBED_LIMIT = 8
SEARCH_BACKLOG_LIMIT = 2_000


def _changed_ids(
    store: SearchableStore, seen: tuple[int, int] | None
) -> tuple[tuple[int, int], set[str] | None]:
    text = store.text_index
    if seen is None or seen[0] != text.serial:
        return (text.serial, text.version), None
    version, ids = text.changes_since(seen[1])
    return (text.serial, version), ids


def background_limits(dense: DenseIndex) -> dict[str, int]:
    """Only an index with a background embedder may leave memories for later."""
    if not dense.embeds_in_background:
        return {}
    return {"embed_limit": SEARCH_EMBED_LIMIT, "backlog_limit": SEARCH_BACKLOG_LIMIT}


def sync_dense(
    store: SearchableStore, dense: DenseIndex, prefer: Sequence[str] | None = None
) -> None:
    """Bring the dense index's rows up to date with what changed since the last search
    (``prefer``: of the memories not embedded yet, embed now only these ids, best first)."""
    state = store.dense_sync
    mark, ids = _changed_ids(store, state.dense_at.get(id(dense)))
    memories = store.memories_by_id
    pending = state.pending.setdefault(id(dense), set())
    if ids is None:  # first sync, or the store reloaded: all of it, and no other row
        left = dense.sync(
            list(memories.values()), removed=None, prefer=prefer, **background_limits(dense)
        )
        pending.clear()
    else:
        # While a background embedder works through a large backlog, its rows are synced once
        # it is done, not re-checked by every search (10k key hashes each).
        if len(pending) <= SEARCH_BACKLOG_LIMIT or not dense.background_busy:
            ids = ids | pending
            pending.clear()
        left = dense.sync(
            [memories[i] for i in ids if i in memories],
            [i for i in ids if i not in memories],
            prefer=prefer,
            **background_limits(dense),
        )
    pending.update(m.id for m in left or ())
    state.dense_at[id(dense)] = mark


def dense_scores(
    store: SearchableStore,
    dense: DenseScorer,
    query: str,
    scope: set[str] | None,
    lexical: dict[str, float],
    pool_k: int,
) -> dict[str, float]:
    """Cosines of the query with its ``pool_k`` nearest memories in ``scope``, and with every
    lexical hit (``lexical``, best first) beyond them."""
    if isinstance(dense, DenseIndex):  # rows kept in step: one matvec per query
        # Of the memories a burst of saves left unembedded, the question's lexical hits are
        # embedded now (their cosine can change this ranking); the rest are the background
        # embedder's. Taking the oldest ones instead made a search after ~400 saves embed
        # texts that the background thread was embedding at the same time.
        sync_dense(store, dense, prefer=list(lexical))  # best lexical hit first
        scores = dense.ranked(query, pool_k, scope)
        missing = [i for i in lexical if i not in scores]
        if missing:
            scores.update(dense.scores_of(query, missing))
        return scores
    # A plain DenseScorer wants the memories themselves.
    memories = store.memories_by_id
    pool = [memories[i] for i in scope] if scope is not None else list(memories.values())
    scores = dense.top(query, pool, pool_k)
    extra = [memories[i] for i in lexical if i not in scores]
    if extra:
        scores.update(dense.similarities(query, extra))
    return scores


__all__ = [
    "SEARCH_BACKLOG_LIMIT",
    "SEARCH_EMBED_LIMIT",
    "background_limits",
    "dense_scores",
    "sync_dense",
]
