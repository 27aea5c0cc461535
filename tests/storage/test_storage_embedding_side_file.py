"""New vectors are appended to the embedding cache's side file, not written with every other
vector again; a torn append, a foreign side file or a new model width cost time, never a vector."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from fakes import HashingEmbedder

from cortexgraph.storage.embedding_cache import EmbeddingCache, side_path, text_key
from cortexgraph.storage.embedding_files import CacheFiles

BASE = [f"kayak trip number {i}" for i in range(40)]


def _cache_file(path: Path) -> Path:
    return next(path.glob(".embeddings-*.npz"))


def _saved(path: Path, texts: list[str], width: int = 8) -> EmbeddingCache:
    cache = EmbeddingCache(HashingEmbedder(width), path)
    cache.embed(texts)
    cache.save()
    return cache


def test_a_few_new_vectors_are_appended_and_read_back(tmp_path) -> None:
    first = _saved(tmp_path, BASE)
    want = first.embed([*BASE, "a canoe", "a paddle"])  # embeds the two new texts
    main = _cache_file(tmp_path)
    before = main.stat().st_mtime_ns, main.read_bytes()
    first.save()
    assert (main.stat().st_mtime_ns, main.read_bytes()) == before  # not rewritten
    assert side_path(main).exists()
    model = HashingEmbedder(8)
    again = EmbeddingCache(model, tmp_path)
    assert np.array_equal(again.embed([*BASE, "a canoe", "a paddle"]), want)
    assert model.texts == []  # every vector from the file and its side file


def test_a_torn_append_is_left_out_and_cut_before_the_next(tmp_path) -> None:
    cache = _saved(tmp_path, BASE)
    cache.embed(["a canoe"])
    cache.save()
    side = side_path(_cache_file(tmp_path))
    with side.open("ab") as f:
        f.write(b"\x01" * 20)  # a crash in the middle of a record
    model = HashingEmbedder(8)
    reader = EmbeddingCache(model, tmp_path)
    reader.embed([*BASE, "a canoe", "a paddle"])
    assert model.texts == ["a paddle"]
    reader.save()  # appends after cutting the torn bytes
    model = HashingEmbedder(8)
    EmbeddingCache(model, tmp_path).embed([*BASE, "a canoe", "a paddle"])
    assert model.texts == []


def test_a_side_file_of_another_kind_is_ignored(tmp_path) -> None:
    _saved(tmp_path, BASE)
    side_path(_cache_file(tmp_path)).write_bytes(b"not a side file at all, just bytes" * 10)
    model = HashingEmbedder(8)
    EmbeddingCache(model, tmp_path).embed(BASE)
    assert model.texts == []  # the .npz still serves


def test_many_new_vectors_or_a_new_width_rewrite_the_file_and_drop_the_side_file(tmp_path):
    cache = _saved(tmp_path, BASE)
    cache.embed(["a canoe"])
    cache.save()
    side = side_path(_cache_file(tmp_path))
    assert side.exists()
    cache.embed([f"new text {i}" for i in range(30)])  # more than a quarter of the cache
    cache.save()
    assert not side.exists()
    model = HashingEmbedder(8)
    EmbeddingCache(model, tmp_path).embed([*BASE, "a canoe"])
    assert model.texts == []
    wider = EmbeddingCache(HashingEmbedder(4), tmp_path)  # another model width: rewritten
    wider.embed(["a new word"])  # the model's first answer shows its width
    wider.save()
    assert not side.exists()
    with np.load(_cache_file(tmp_path)) as data:
        assert data["vectors"].shape == (1, 4)


def test_a_cache_removed_while_held_is_not_written_back(tmp_path):
    """memory_wipe removes the cache files while the MCP server holds the vectors, and its
    background embedder saves after each batch: the wiped vectors must not come back."""
    cache = _saved(tmp_path, BASE)
    cache.embed(["a canoe"])
    for path in tmp_path.glob(".embeddings-*"):
        path.unlink()
    assert cache.missing(["a paddle"]) == ["a paddle"]  # looks at the files first
    cache.save()
    assert not list(tmp_path.glob(".embeddings-*.npz"))
    assert not side_path(tmp_path / ".embeddings-hashing-test.npz").exists()


def _append_in_width(path: Path, texts: list[str], width: int) -> None:
    """``texts``' vectors appended to the side file by its own writer, ``width`` wide."""
    files = CacheFiles(_cache_file(path))
    files.read()  # a writer reads what is there before it appends
    rows = dict(zip(map(text_key, texts), HashingEmbedder(width).embed(texts), strict=True))
    with files.locked():
        assert files.append(rows, width, held=len(BASE))


@pytest.mark.parametrize("when", ["before the read", "after the read"])
def test_a_side_file_in_another_width_is_re_embedded_and_the_file_kept(tmp_path, caplog, when):
    """A side file 4 wide beside a cache file 8 wide (a model switched under the same name,
    or a file from another version), there when the cache is read or appended by another
    process after: its vectors are missing (re-embedded, a warning), the cache file's serve,
    and nothing crashes ("could not broadcast")."""
    _saved(tmp_path, BASE)
    other = ["a canoe", "a paddle", "a life vest"]
    model = HashingEmbedder(8)
    cache = EmbeddingCache(model, tmp_path)
    if when == "after the read":
        cache.embed(BASE)
    _append_in_width(tmp_path, other, 4)
    with caplog.at_level(logging.WARNING, logger="cortexgraph.storage"):
        got = cache.held_rows([*BASE, *other])[:]
    assert np.array_equal(got, HashingEmbedder(8).embed([*BASE, *other]))
    assert np.array_equal(np.stack(cache.held([*BASE, *other])), got)
    assert sorted(model.texts) == sorted(other)  # the cache file's vectors served
    assert "3 vector(s) of width 4" in caplog.text
    cache.save()  # the side file is rewritten with the model's vectors
    model = HashingEmbedder(8)
    assert np.array_equal(EmbeddingCache(model, tmp_path).embed([*BASE, *other]), got)
    assert model.texts == []


def test_two_widths_under_one_name_leave_a_mixed_pair_each_width_reads(tmp_path) -> None:
    """These writers make such a pair themselves when two processes run models of two
    widths under one name (a model switched while a server still runs the old one): one
    rewrites the cache file in its width, the other then appends beside it in its own (an
    append checks the side file's width, not the cache file's). A reader of either width
    gets its model's vectors, never "could not broadcast"."""
    server = _saved(tmp_path, BASE)  # 8 wide, still running
    switched = EmbeddingCache(HashingEmbedder(4), tmp_path)
    switched.embed(["a canoe"])  # the model's width drops the 8-wide vectors
    switched.save()  # the cache file rewritten 4 wide
    server.embed(["a paddle"])
    server.save()  # appended 8 wide beside it
    main = _cache_file(tmp_path)
    with np.load(main) as data:
        assert data["vectors"].shape[1] == 4
    assert int.from_bytes(side_path(main).read_bytes()[8:12], "little") == 8
    asked = [*BASE[:5], "a canoe", "a paddle", "a life vest"]
    for width in (4, 8):
        got = EmbeddingCache(HashingEmbedder(width), tmp_path).held_rows(asked)[:]
        assert np.array_equal(got, HashingEmbedder(width).embed(asked))
