"""Readers of the embedding cache while another thread changes what it holds.

The MCP server shares one cache between its search threads (a query's vector settles the
model's width: ``settle_width``) and its background embedder (which saves after each batch,
and after another process's memory_wipe drops what it held). A reader that checked its texts
were held and then read them in a second hold of the lock raised KeyError when such a change
fell between the two. Here the change is run at that very point (another thread, started
and joined there), not left to a sleep's luck."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

import numpy as np
import pytest
from fakes import HashingEmbedder

from cortexgraph.storage.embedding_cache import EmbeddingCache

TEXTS = [f"a kayak trip on lake number {i} with {i % 3} friends" for i in range(24)]


def _in_another_thread(work: Callable[[], object]) -> None:
    other = threading.Thread(target=work)
    other.start()
    other.join()


class _ThenAnotherThread:
    """The cache's lock; right after its first release, ``then`` runs in another thread
    (which takes the lock itself) before the releasing thread goes on."""

    def __init__(self, lock: threading.Lock, then: Callable[[], object]) -> None:
        self._lock, self._then = lock, then

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._lock.release()
        then, self._then = self._then, None
        if then is not None:
            _in_another_thread(then)


class _WhileEmbedding(HashingEmbedder):
    """The fake model; at its next call, ``then`` runs in another thread before it answers."""

    def __init__(self, dims: int) -> None:
        super().__init__(dims)
        self.then: Callable[[], object] | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        then, self.then = self.then, None
        if then is not None:
            _in_another_thread(then)
        return super().embed(texts)


def _stacked(cache: EmbeddingCache, texts: list[str]) -> np.ndarray:
    return np.stack(cache.held(texts))


def _gathered(cache: EmbeddingCache, texts: list[str]) -> np.ndarray:
    return cache.held_rows(texts)[:]


READS = pytest.mark.parametrize("read", [_stacked, _gathered], ids=["held", "held_rows"])


def test_held_rows_during_a_width_change_answers_the_rows_before_it(tmp_path: Path) -> None:
    """The cache file is another model's (width 4, the same name); a search thread's query
    vector shows the model's width (16) while a reader gathers rows it found held. (``held``
    of texts all held checked and read them in one hold of the lock already.)"""
    old = EmbeddingCache(HashingEmbedder(4), tmp_path)
    before = old.embed(TEXTS)
    old.save()
    model = HashingEmbedder(16)
    cache = EmbeddingCache(model, tmp_path)
    cache._lock = _ThenAnotherThread(cache._lock, lambda: cache.settle_width(16))  # type: ignore[assignment]
    assert np.array_equal(_gathered(cache, TEXTS), before)  # whole: no row dropped under it
    assert model.texts == []
    assert np.array_equal(_gathered(cache, TEXTS), HashingEmbedder(16).embed(TEXTS))  # then new


@READS
def test_a_read_during_a_wipe_and_a_save_embeds_what_the_wipe_dropped(tmp_path: Path, read):
    """Another process's memory_wipe removes the cache files while this one embeds a new
    text; the background embedder's save then drops every vector held (not written back).
    The reader's texts held before are embedded again, not a KeyError."""
    first = EmbeddingCache(HashingEmbedder(16), tmp_path)
    first.embed(TEXTS[:20])
    first.save()
    model = _WhileEmbedding(16)
    cache = EmbeddingCache(model, tmp_path)
    cache.embed(TEXTS[20:21])  # unsaved: the background embedder's save will run

    def wipe_then_save() -> None:
        for path in tmp_path.glob(".embeddings-*"):
            path.unlink()
        cache.save()

    model.then, model.texts = wipe_then_save, []
    asked = TEXTS[:22]  # twenty from the file, one embedded here, one new
    assert np.array_equal(read(cache, asked), HashingEmbedder(16).embed(asked))
    assert sorted(model.texts) == sorted(asked)  # the new one, then those the wipe dropped
    assert cache.missing(asked) == []
