"""An embedding cache's vectors read as the rows of one matrix (``EmbeddingCache.held_rows``):
wherever a vector is held (the cache file's matrix, its side file, the model's answer), each
text's row is the vector ``held`` answers it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from fakes import HashingEmbedder

from cortexgraph.storage.embedding_cache import EmbeddingCache

TEXTS = [f"a kayak trip on lake number {i} with {i % 3} friends" for i in range(24)]


class NaNFor(HashingEmbedder):
    """The fake model, answering NaN for one text (a vector too bad to cache)."""

    def __init__(self, bad: str) -> None:
        super().__init__(16)
        self.bad = bad

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = super().embed(texts)
        out[[k for k, t in enumerate(texts) if t == self.bad]] = np.nan
        return out


def _saved_twice(tmp_path) -> None:
    """Twenty vectors in the cache file, three more in its side file."""
    first = EmbeddingCache(HashingEmbedder(16), tmp_path)
    first.embed(TEXTS[:20])
    first.save()
    first.embed(TEXTS[20:23])
    first.save()
    assert len(list(tmp_path.glob(".embeddings-*.added.bin"))) == 1


def test_held_rows_are_each_texts_held_vector_wherever_it_is_held(tmp_path) -> None:
    _saved_twice(tmp_path)
    model = HashingEmbedder(16)
    cache = EmbeddingCache(model, tmp_path)
    asked = [*TEXTS[::-1], TEXTS[3]]  # the file's rows, the side file's, a new one, a repeat
    rows = cache.held_rows(asked)
    assert model.texts == [TEXTS[23]]  # only the one held nowhere was embedded
    want = np.stack(cache.held(asked))
    assert np.array_equal(want, HashingEmbedder(16).embed(asked))  # the model's, as saved
    assert len(rows) == len(asked)
    assert rows[:].dtype == np.float32 and rows[:].tobytes() == want.tobytes()
    assert np.array_equal(rows[3:9], want[3:9])
    picked = np.array([len(asked) - 1, 0, 22, 5, 5])
    assert np.array_equal(rows[picked], want[picked])
    assert rows[np.array([], dtype=np.int64)].shape == (0, 16)
    from_file = [TEXTS[7], *TEXTS[:20]]  # the file's matrix alone: its rows taken at C speed
    assert np.array_equal(cache.held_rows(from_file)[:], HashingEmbedder(16).embed(from_file))


# The file's rows alone (one take from its matrix), and with the side file's and a new one.
ASKED = pytest.mark.parametrize("asked", [TEXTS[:20], TEXTS], ids=["file", "file+side+new"])


@ASKED
def test_a_read_of_held_rows_is_a_new_array(tmp_path, asked) -> None:
    _saved_twice(tmp_path)
    cache = EmbeddingCache(HashingEmbedder(16), tmp_path)
    want = HashingEmbedder(16).embed(asked)  # not an answer of the cache: it could be shared
    assert np.array_equal(cache.embed(asked), want)
    read = cache.held_rows(asked)[:]
    read[:] = 7.0
    assert np.array_equal(cache.embed(asked), want)
    assert np.array_equal(cache.held_rows(asked)[:], want)


def test_a_vector_held_from_the_file_cannot_be_written_into(tmp_path) -> None:
    """``held`` answers views of the file's matrix: a write into one would change the cache
    for every later reader, so it fails."""
    _saved_twice(tmp_path)
    cache = EmbeddingCache(HashingEmbedder(16), tmp_path)
    want = cache.embed(TEXTS[:20])
    held = cache.held(TEXTS[:1])[0]
    with pytest.raises(ValueError, match="read-only"):
        held[:] = 7.0
    assert np.array_equal(cache.embed(TEXTS[:20]), want)


def test_a_vector_too_bad_to_cache_is_a_zero_row(tmp_path) -> None:
    cache = EmbeddingCache(NaNFor(TEXTS[1]), tmp_path)
    rows = cache.held_rows(TEXTS[:3])[:]
    assert not rows[1].any() and rows[0].any() and rows[2].any()
    assert cache.missing(TEXTS[:3]) == [TEXTS[1]]  # served, never held


def test_a_file_of_only_bad_rows_in_another_width_is_no_obstacle(tmp_path) -> None:
    """A cache file none of whose rows is usable (here: all zero) holds no vector, so its
    width is not the cache's: the model's vectors of another width are answered and saved
    (the file's matrix once stood under them: "could not broadcast", in embed and save)."""
    first = EmbeddingCache(HashingEmbedder(4), tmp_path)
    first.embed(TEXTS[:3])
    first.save()
    (file,) = tmp_path.glob(".embeddings-*.npz")
    with np.load(file) as data:
        keys = data["keys"]
    np.savez(file, keys=keys, vectors=np.zeros((len(keys), 4), dtype=np.float32))
    model = HashingEmbedder(16)
    cache = EmbeddingCache(model, tmp_path)
    want = model.embed(TEXTS[:4])
    assert np.array_equal(cache.embed(TEXTS[:4]), want)
    assert np.array_equal(cache.held_rows(TEXTS[:4])[:], want)
    cache.save()
    again = EmbeddingCache(HashingEmbedder(16), tmp_path)
    assert np.array_equal(again.embed(TEXTS[:4]), want)
    assert again.missing(TEXTS[:4]) == []
