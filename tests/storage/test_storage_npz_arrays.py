"""An uncompressed .npz's arrays read from their byte ranges are np.load's, or not read at all."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cortexgraph.storage.npz_arrays import stored_arrays

ARRAYS = {
    "keys": np.array(["0123456789abcdef" * 2, "f" * 32]),
    "vectors": np.arange(12, dtype=np.float32).reshape(3, 4),
    "columns": np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)),
    "empty": np.zeros((0, 4), dtype=np.float32),
}


def test_the_arrays_are_those_np_load_reads(tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    np.savez(path, **ARRAYS)
    got = stored_arrays(path, tuple(ARRAYS))
    assert got is not None
    with np.load(path) as data:
        for name in ARRAYS:
            assert got[name].dtype == data[name].dtype
            assert np.array_equal(got[name], data[name])


def test_a_compressed_missing_or_object_member_is_left_to_np_load(tmp_path: Path) -> None:
    compressed, objects = tmp_path / "c.npz", tmp_path / "o.npz"
    np.savez_compressed(compressed, **ARRAYS)
    np.savez(objects, keys=np.array([{"a": 1}], dtype=object))
    assert stored_arrays(compressed, ("keys",)) is None
    assert stored_arrays(objects, ("keys",)) is None
    assert stored_arrays(tmp_path / "none.npz", ("keys",)) is None
    np.savez(tmp_path / "k.npz", keys=ARRAYS["keys"])
    assert stored_arrays(tmp_path / "k.npz", ("keys", "vectors")) is None


def test_a_header_claiming_more_than_its_member_or_a_torn_file_is_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.npz"
    np.savez(path, **ARRAYS)
    blob = path.read_bytes()
    at = blob.index(b"(3, 4)")
    path.write_bytes(blob[:at] + b"(9, 9)" + blob[at + 6 :])  # 324 bytes in a 48-byte member
    assert stored_arrays(path, ("vectors",)) is None
    path.write_bytes(blob[: len(blob) // 2])
    assert stored_arrays(path, ("vectors",)) is None
