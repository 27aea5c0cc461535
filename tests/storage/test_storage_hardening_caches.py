"""Issue 15, storage side: caches (index snapshot, embedding cache) cost time, never truth.

A tampered snapshot is ignored, and compaction never writes what only a snapshot held; a bad
embedding cache row is dropped and re-embedded, never a crash or a distorted search.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import HashingEmbedder

from cortexgraph.storage import StoreConfig, open_store

NOW = 1_704_067_200


# -- medium 8: the snapshot is checksummed, and never the source of what compaction writes ----

SNAP = StoreConfig(snapshot_min_bytes=1)


def _meaning(path: Path) -> dict[str, dict]:
    lines = (path / "memories.jsonl").read_bytes().split(b"\n")
    return {json.loads(line)["id"]: json.loads(line) for line in lines if line.strip()}


def _snapshotted_store(path: Path) -> list:
    store = open_store(path, SNAP)
    saved = [store.save(f"kayak trip number {i:03d}", tags=["t"], now=NOW) for i in range(20)]
    open_store(path, SNAP)  # writes the snapshot
    return saved


def test_tampered_snapshot_is_ignored_and_compaction_keeps_the_jsonl(tmp_path):
    from cortexgraph.storage.index_snapshot import SNAPSHOT_NAME

    saved = _snapshotted_store(tmp_path)
    before = _meaning(tmp_path)
    snap = tmp_path / SNAPSHOT_NAME
    raw = snap.read_bytes()
    at = raw.rindex(b"trip number 007")
    snap.write_bytes(raw[:at] + b"TAMPERED" + raw[at + 8 :])  # an 8-byte edit of the body
    store = open_store(tmp_path, SNAP)
    assert {m.id: m.content for m in store.list()} == {m.id: m.content for m in saved}
    store.compact()
    assert _meaning(tmp_path) == before


def test_a_snapshot_with_a_forged_checksum_still_cannot_change_the_jsonl(tmp_path):
    from cortexgraph.storage.index_snapshot import read_snapshot, write_snapshot

    saved = _snapshotted_store(tmp_path)
    before = _meaning(tmp_path)
    data = (tmp_path / "memories.jsonl").read_bytes()
    rules = repr(SNAP.record_limits())
    state, _ = read_snapshot(tmp_path, data, rules)
    victim = saved[7].id
    columns = state[0]  # the memories, one list per field
    columns["content"][columns["id"].index(victim)] = "forged content"
    write_snapshot(tmp_path, data, state, rules)  # checksum recomputed: a deliberate forgery
    store = open_store(tmp_path, SNAP)
    store.compact()
    assert _meaning(tmp_path) == before
    assert store.get(victim).content == saved[7].content  # the view was rebuilt from the files
    # and the snapshot the compaction wrote is of the files, not of the forgery
    assert open_store(tmp_path, SNAP).get(victim).content == saved[7].content


# -- medium 7: the embedding cache is checked on load; a bad row never breaks search ---------


def _dense_store(path: Path, width: int):
    from cortexgraph.storage.embeddings import EmbeddingCache, MatrixDenseIndex

    model = HashingEmbedder(width)
    cache = EmbeddingCache(model, path)
    return open_store(path, dense=MatrixDenseIndex(cache)), cache, model


def _cache_file(path: Path) -> Path:
    return next(path.glob(".embeddings-*.npz"))


def _search_ids(store) -> list[str]:
    return [r.memory.id for r in store.search("kayak", top_k=5, now=NOW, use_embeddings=True)]


def _three_saved(path: Path) -> tuple[list, list[str], Path]:
    """Three memories saved with their vectors: (them, a search's ids, the cache file)."""
    store, cache, _ = _dense_store(path, width=8)
    saved = [store.save(f"kayak {i}", now=NOW) for i in range(3)]
    expected = _search_ids(store)
    cache.save()
    return saved, expected, _cache_file(path)


def test_cache_rows_of_the_wrong_width_are_re_embedded_not_a_crash(tmp_path):
    store, cache, _ = _dense_store(tmp_path, width=8)
    saved = [store.save(f"kayak {i}", now=NOW) for i in range(3)]
    expected = _search_ids(store)
    cache.save()
    store2, _, model2 = _dense_store(tmp_path, width=4)  # another model's width: 4
    assert sorted(_search_ids(store2)) == sorted(m.id for m in saved)
    assert len(model2.texts) >= 3  # the old rows were re-embedded
    store3, _, _model3 = _dense_store(tmp_path, width=8)
    assert _search_ids(store3) == expected


@pytest.mark.parametrize("damage", ["nan", "inf", "huge", "zero"])
def test_non_finite_or_non_unit_rows_are_dropped_on_load(tmp_path, damage):
    import numpy as np

    saved, expected, file = _three_saved(tmp_path)
    with np.load(file) as data:
        keys, vecs = data["keys"], data["vectors"].copy()
    vecs[1] = {"nan": np.nan, "inf": np.inf, "huge": 1e30, "zero": 0.0}[damage]
    np.savez(file, keys=keys, vectors=vecs)
    store2, cache2, model2 = _dense_store(tmp_path, width=8)
    assert len(cache2) == len(saved) - 1
    assert _search_ids(store2) == expected
    assert len(model2.texts) == 2  # only the bad row was embedded again (and the query)


@pytest.mark.parametrize("damage", ["upper case", "short", "long", "not hex", "not ascii"])
def test_a_row_under_a_malformed_key_is_dropped_on_load(tmp_path, damage):
    # The keys are checked all at once (embedding_files._all_keys) and one by one only when
    # that check fails: a fast path that let a malformed key through would serve its row.
    import numpy as np

    saved, expected, file = _three_saved(tmp_path)
    with np.load(file) as data:
        keys, vecs = data["keys"].tolist(), data["vectors"]
    good = keys[1]
    keys[1] = {
        "upper case": "A" + good[1:],
        "short": good[:-1],
        "long": good + "0",
        "not hex": "g" + good[1:],
        "not ascii": "\u00e9" + good[1:],
    }[damage]
    np.savez(file, keys=np.array(keys), vectors=vecs)
    store2, cache2, model2 = _dense_store(tmp_path, width=8)
    assert len(cache2) == len(saved) - 1
    assert _search_ids(store2) == expected
    assert len(model2.texts) == 2  # only that row was embedded again (and the query)


@pytest.mark.parametrize("damage", ["int dtype", "1-d", "keys mismatch", "strings"])
def test_a_cache_file_of_the_wrong_shape_or_type_is_ignored(tmp_path, damage):
    import numpy as np

    store, cache, _ = _dense_store(tmp_path, width=8)
    store.save("kayak", now=NOW)
    expected = _search_ids(store)
    cache.save()
    file = _cache_file(tmp_path)
    with np.load(file) as data:
        keys, vecs = data["keys"], data["vectors"]
    vecs = {
        "int dtype": vecs.astype(np.int64),
        "1-d": vecs[0],
        "keys mismatch": vecs,
        "strings": vecs.astype(str),
    }[damage]
    keys = np.concatenate([keys, keys]) if damage == "keys mismatch" else keys
    np.savez(file, keys=keys, vectors=vecs)
    store2, cache2, _ = _dense_store(tmp_path, width=8)
    assert len(cache2) == 0
    assert _search_ids(store2) == expected


def test_the_cache_file_is_read_when_its_vectors_are_first_needed(tmp_path):
    # A consolidation run with nothing new to compare never needs them: making the cache
    # must not read the file (tens of MB at 40k memories).
    from cortexgraph.storage.embeddings import EmbeddingCache

    model = HashingEmbedder(8)
    early = EmbeddingCache(model, tmp_path)  # made before the file exists
    writer = EmbeddingCache(model, tmp_path)
    writer.embed(["kayak one", "kayak two"])
    writer.save()
    assert len(early) == 2
    early.embed(["kayak one", "kayak two"])
    assert len(model.texts) == 2  # served from the file, not embedded again


def test_a_tally_counts_only_what_its_own_thread_asked(tmp_path):
    """A consolidation run reports what it asked of the server's cache, not what the
    background embedder asked of it meanwhile (the run's count was 2 too high under load)."""
    import threading

    from cortexgraph.storage.embedding_cache import EmbeddingCache

    cache = EmbeddingCache(HashingEmbedder(), tmp_path)
    tally = cache.tally_this_thread()
    cache.embed(["alpha", "beta"])
    other = threading.Thread(target=cache.embed, args=(["gamma", "delta", "epsilon"],))
    other.start()
    other.join()
    cache.embed(["alpha", "gamma"])  # both held by now
    assert (tally.hits, tally.embedded) == (2, 2)
    assert (cache.hits, cache.embedded) == (2, 5)  # the cache's own totals: every thread's


def test_a_damaged_byte_in_the_cache_file_costs_its_row_not_the_file(tmp_path):
    # The file's arrays are read from their byte ranges (storage/npz_arrays.py), and every row
    # is checked: a flipped byte in one vector drops that vector. Through zipfile's reader the
    # member's CRC failed and every vector was dropped (100k re-embedded).
    import numpy as np

    saved, expected, file = _three_saved(tmp_path)
    blob = bytearray(file.read_bytes())
    with np.load(file) as data:
        first = data["vectors"][1].tobytes()
    at = blob.index(first)
    blob[at + 3] ^= 0x7F  # the exponent of row 1's first value: far from unit length
    file.write_bytes(bytes(blob))
    store2, cache2, model2 = _dense_store(tmp_path, width=8)
    assert len(cache2) == len(saved) - 1
    assert _search_ids(store2) == expected
    assert len(model2.texts) == 2  # only the damaged row was embedded again (and the query)


@pytest.mark.parametrize("kind", ["compressed", "torn"])
def test_a_compressed_cache_file_is_read_and_a_torn_one_ignored(tmp_path, kind):
    import numpy as np

    saved, expected, file = _three_saved(tmp_path)
    if kind == "compressed":  # not what this version writes: np.load reads it
        with np.load(file) as data:
            keys, vecs = data["keys"], data["vectors"]
        np.savez_compressed(file, keys=keys, vectors=vecs)
    else:
        file.write_bytes(file.read_bytes()[: file.stat().st_size * 2 // 3])
    store2, cache2, _ = _dense_store(tmp_path, width=8)
    assert len(cache2) == (len(saved) if kind == "compressed" else 0)
    assert _search_ids(store2) == expected
