"""Arrays of an uncompressed ``.npz`` (``np.savez``) read straight from their byte ranges.

``np.load`` reads a member through zipfile's reader: chunked copies and a CRC-32 of every
chunk, 0.35-0.5 s for the embedding cache's 150 MB file at 100k memories, against ~0.05 s for
one read of the member's bytes into its array. The format is unchanged (files written by any
numpy still read), and nothing here trusts the file: a member must be stored uncompressed,
lie inside the file, and hold a plain ``.npy`` array (no objects, no pickle) whose bytes fit
in the member; anything else is None, and the caller reads the file with ``np.load``.

No CRC is checked: the callers check every row they keep (the embedding cache: finite,
unit-length vectors under well-formed keys), so a damaged byte costs the rows it lies in,
where a CRC mismatch cost the whole file.
"""

from __future__ import annotations

import os
import struct
import zipfile
from pathlib import Path
from typing import BinaryIO

import numpy as np

_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., name length, extra length
_LOCAL_SIGNATURE = b"PK\x03\x04"


def stored_arrays(path: Path, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """``{name: array}`` for the members ``<name>.npy`` of the ``.npz`` at ``path``, read
    without zipfile's member reader; None when any of them is missing, compressed or not a
    plain ``.npy`` array that fits in its member (read the file with ``np.load`` then)."""
    try:
        with path.open("rb") as f:
            with zipfile.ZipFile(f) as archive:
                infos = {info.filename: info for info in archive.infolist()}
            out: dict[str, np.ndarray] = {}
            for name in names:
                info = infos.get(f"{name}.npy")
                if info is None or info.compress_type != zipfile.ZIP_STORED:
                    return None
                array = _member_array(f, info)
                if array is None:
                    return None
                out[name] = array
            return out
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, struct.error):
        return None


def _member_array(f: BinaryIO, info: zipfile.ZipInfo) -> np.ndarray | None:
    f.seek(info.header_offset)
    signature, name_len, extra_len = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
    if signature != _LOCAL_SIGNATURE:
        return None
    start = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
    f.seek(start)
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    else:
        return None
    if dtype.hasobject:
        return None
    count = int(np.prod(shape, dtype=np.int64))
    size = count * dtype.itemsize
    end = f.tell() + size
    if end - start > info.file_size or end > os.fstat(f.fileno()).st_size:
        return None  # the header claims more than the member holds, or the file
    flat = np.empty(count, dtype=dtype)
    if size and f.readinto(flat.view(np.uint8)) != size:  # type: ignore[attr-defined]
        return None
    return flat.reshape(shape, order="F" if fortran else "C")


__all__ = ["stored_arrays"]
