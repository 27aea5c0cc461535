"""Processes that share one embedding cache folder (spawned by test_storage_embedding_processes:
each is its own interpreter, as the MCP server and a consolidation run are)."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import numpy as np
from fakes import HashingEmbedder

from cortexgraph.storage.embedding_cache import EmbeddingCache, text_key

WIDTH = 8


def texts(who: str, n: int, first: int = 0) -> list[str]:
    return [f"{who} wrote note {i} about kayaks" for i in range(first, first + n)]


def save_texts(folder: str, batch: list[str]) -> None:
    """Another process: embed ``batch`` into the folder's cache and save."""
    cache = EmbeddingCache(HashingEmbedder(WIDTH), folder)
    cache.embed(batch)
    cache.save()


def save_in_a_forked_child(folder: str, base: list[str], added: str) -> None:
    """A process that makes and saves a cache, then forks a child that embeds ``added`` and
    saves through the same cache object (filelock refuses a lock made before a fork). Run in a
    fresh interpreter: forking the test worker itself would copy its other threads' locks."""
    cache = EmbeddingCache(HashingEmbedder(WIDTH), folder)
    cache.embed(base)
    cache.save()
    child = multiprocessing.get_context("fork").Process(target=_embed_and_save, args=(cache, added))
    child.start()
    child.join(timeout=60)
    if child.exitcode != 0:
        raise SystemExit(f"the forked child exited with {child.exitcode}")


def _embed_and_save(cache: EmbeddingCache, text: str) -> None:
    cache.embed([text])
    cache.save()


def save_in_rounds(folder: str, who: str, rounds: int, per_round: int, start: Any) -> None:
    """A writer that saves after each small batch (the MCP server's background embedder);
    ``per_round`` large against the cache makes each save a rewrite (a consolidation run)."""
    cache = EmbeddingCache(HashingEmbedder(WIDTH), folder)
    start.wait()
    for r in range(rounds):
        cache.embed(texts(who, per_round, r * per_round))
        cache.save()


def read_in_rounds(folder: str, everyone: list[str], rounds: int, out: str, start: Any) -> None:
    """A reader opening the cache again and again while others write: every vector it is
    served must be one that was saved, whole (a torn or misaligned record would not be)."""
    want = dict(zip(map(text_key, everyone), HashingEmbedder(WIDTH).embed(everyone), strict=True))
    bad, seen = 0, []
    start.wait()
    for _ in range(rounds):
        held = EmbeddingCache(HashingEmbedder(WIDTH), folder)._vectors
        bad += sum(k not in want or not np.allclose(v, want[k], atol=1e-6) for k, v in held.items())
        seen.append(len(held))
    Path(out).write_text(json.dumps({"bad": bad, "seen": seen}))
