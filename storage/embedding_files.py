"""The embedding cache's files, shared by every process that opens the store.

Two files hold a model's vectors: ``.embeddings-<model>.npz`` (keys and vectors, rewritten
whole) and its side file ``.embeddings-<model>.added.bin`` (a header with the width, then
fixed-size records: the 16-byte content hash and the float32 vector; vectors added since the
``.npz`` was written, appended).

Several processes write them: the MCP server's background embedder saves after each batch
while a consolidation run (CLI, deployment: another process) reads, appends or rewrites the
same files. A writer holds ``.embeddings-<model>.lock`` (``flock`` through filelock, like the
store's ``.cortexgraph.lock``) and first reads what others appended since it last looked
(``read_new``), so:

- two appends never interleave, and a torn last record can only be a crashed writer's, so
  cutting it (before the next append) never cuts a live writer's record;
- a rewrite takes in the side file's records and, when another process rewrote the ``.npz``
  since it was read, that file's vectors too, before it replaces the ``.npz`` and removes the
  side file: no vector another process saved is lost.

A reader takes no lock (a 150 MB ``.npz`` takes ~0.15 s to read; the background embedder
must not wait on it): it reads the ``.npz``, then the side file, and reads again when the
``.npz`` changed meanwhile (a rewrite between the two reads removed the side file it would have
read). A torn last record, an append in flight, is left out; the next look reads it whole.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from filelock import FileLock

from cortexgraph.storage.keyed_rows import KeyedRows
from cortexgraph.storage.npz_arrays import stored_arrays

log = logging.getLogger(__name__)

_KEY_RE = re.compile(r"[0-9a-f]{32}")
_KEY_CHARS = 32
_HEX_DIGITS = b"0123456789abcdef"
# Stored vectors are L2-normalised; a norm outside this band is damage, not rounding.
NORM_TOLERANCE = 0.05
# A writer waits this long for another's append or rewrite (a rewrite at 100k: ~2 s).
LOCK_TIMEOUT_S = 60.0
_READ_TRIES = 3  # a rewrite between the reads of the two files: read again

Stamp = tuple[int, int, int]  # inode, size, mtime (ns): a file's identity and version


def good_rows(vectors: np.ndarray) -> np.ndarray:
    """Mask of the rows of a 2-D float array that are finite and of unit length."""
    with np.errstate(all="ignore"):
        # A row with a NaN or infinity has a non-finite square sum: one pass, no masked copy.
        # In the rows' own float32 (a float64 sum was 3.4 of a 10k cache read's 18 ms): its
        # rounding is far inside the tolerance, and a row so large that its squares overflow
        # float32 is as far from unit length.
        norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
    mask: np.ndarray = np.isfinite(norms) & (np.abs(norms - 1.0) <= NORM_TOLERANCE)
    return mask


_SIDE_MAGIC = b"CGEMBv1\n"
_SIDE_HEADER = len(_SIDE_MAGIC) + 4  # the magic, then the width (uint32, little-endian)
_KEY_BYTES = 16  # embedding_cache.text_key's blake2b digest


def _side_records(width: int) -> np.dtype:
    return np.dtype([("key", f"V{_KEY_BYTES}"), ("vec", "<f4", (width,))])


def side_path(cache_file: Path) -> Path:
    """The append-only side file of the cache file ``cache_file`` (``….npz``)."""
    return cache_file.with_name(f"{cache_file.stem}.added.bin")


def _stamp(path: Path) -> Stamp | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _fstamp(fd: int) -> Stamp:
    st = os.fstat(fd)
    return st.st_ino, st.st_size, st.st_mtime_ns


def _side_width(raw: bytes) -> int | None:
    if len(raw) < _SIDE_HEADER or raw[: len(_SIDE_MAGIC)] != _SIDE_MAGIC:
        return None
    width = int.from_bytes(raw[len(_SIDE_MAGIC) : _SIDE_HEADER], "little")
    return width if 0 < width <= 65_536 else None


def _records(raw: bytes, width: int) -> tuple[dict[str, np.ndarray], int]:
    """The valid records among the whole ones in ``raw``, and the bytes those whole ones span."""
    records = _side_records(width)
    n = len(raw) // records.itemsize
    rows = np.frombuffer(raw, dtype=records, count=n)
    vecs, blob = rows["vec"], rows["key"].tobytes()
    ok = good_rows(vecs).tolist()
    keys = (blob[i : i + _KEY_BYTES].hex() for i in range(0, len(blob), _KEY_BYTES))
    return {key: vec for key, vec, good in zip(keys, vecs, ok, strict=True) if good}, (
        n * records.itemsize
    )


def _all_keys(names: list[str]) -> bool:
    """Every name is a key (``_KEY_RE``), checked at C speed: one length each, and their
    characters, joined, all lowercase hex digits."""
    if set(map(len, names)) - {_KEY_CHARS}:
        return False
    try:
        joined = "".join(names).encode("ascii")
    except UnicodeEncodeError:
        return False
    return not joined.translate(None, _HEX_DIGITS)


def _read_cache_file(path: Path) -> KeyedRows:
    """The valid rows of a cache file (none if the file as a whole is unusable)."""
    arrays = stored_arrays(path, ("keys", "vectors"))  # a tenth of np.load's time
    if arrays is not None:
        keys, vecs = arrays["keys"], arrays["vectors"]
    else:  # compressed, or not as np.savez writes it: np.load judges it
        with np.load(path, allow_pickle=False) as data:
            keys, vecs = data["keys"], data["vectors"]
    if (
        keys.ndim != 1
        or vecs.ndim != 2
        or len(keys) != len(vecs)
        or vecs.shape[1] == 0
        or not np.issubdtype(vecs.dtype, np.floating)
        or keys.dtype.kind not in "US"
    ):
        log.warning(
            "ignoring embedding cache %s: keys %s %s, vectors %s %s",
            path,
            keys.shape,
            keys.dtype,
            vecs.shape,
            vecs.dtype,
        )
        return KeyedRows()
    vecs = vecs.astype(np.float32, copy=False)
    ok = good_rows(vecs)
    names = keys.astype(str).tolist()
    if _all_keys(names):  # as written here: no key to check one by one (4.9 ms at 10k)
        numbered = zip(names, range(len(names)), strict=True)
        row = dict(numbered) if ok.all() else dict(itertools.compress(numbered, ok.tolist()))
    else:
        match = _KEY_RE.fullmatch
        row = {
            key: k
            for k, (key, good) in enumerate(zip(names, ok.tolist(), strict=True))
            if good and match(key)
        }
    out = KeyedRows(vecs, row)
    if len(out) < len(keys):
        log.warning(
            "embedding cache %s: dropped %d bad row(s) (re-embedded when needed)",
            path,
            len(keys) - len(out),
        )
    return out


def of_width(
    found: dict[str, np.ndarray] | KeyedRows, width: int | None, source: object
) -> dict[str, np.ndarray] | KeyedRows:
    """The vectors ``width`` wide among ``found`` (all of them when ``width`` is None); the
    others are left out, to be embedded again when needed, with a warning. A side file in
    another width than its cache file's (a model switched under the same name, another
    version's file) would put rows of two widths in one matrix ("could not broadcast")."""
    if width is None or not found:
        return found
    if isinstance(found, KeyedRows) and not found.added:  # one matrix: one width
        kept: dict[str, np.ndarray] | KeyedRows = found if found.width == width else {}
    else:
        kept = {key: vec for key, vec in found.items() if len(vec) == width}
    if len(kept) < len(found):
        widths = sorted({len(vec) for _, vec in found.items()} - {width})
        log.warning(
            "embedding cache %s: %d vector(s) of width %s left out, the cache's are %d wide"
            " (re-embedded when needed)",
            source,
            len(found) - len(kept),
            "/".join(map(str, widths)),
            width,
        )
    return kept


class CacheFiles:
    """One model's cache files in one store folder, and what this process last saw of them."""

    def __init__(self, npz: Path) -> None:
        self.npz = npz
        self.side = side_path(npz)
        self._lock_path = str(npz.with_name(f"{npz.stem}.lock"))
        self._lock: FileLock | None = None
        self._lock_pid = 0
        self._npz_seen: Stamp | None = None  # the .npz as this process last read or wrote it
        self._side_seen: Stamp | None = None  # the side file as last read or appended to
        self._side_read = 0  # its bytes read as whole records (header included), or written
        # Another process rewrote the .npz since this one read it: read it again before a
        # rewrite, so the vectors it holds are written back too.
        self.npz_stale = False

    @contextlib.contextmanager
    def locked(self, wait: bool = True) -> Iterator[None]:
        """Hold the writers' lock: filelock.Timeout (an OSError) after ``LOCK_TIMEOUT_S``, or
        at once with ``wait=False`` while another holds it."""
        if self._lock is None or self._lock_pid != os.getpid():
            # filelock refuses a lock made before a fork: a forked child makes its own
            self._lock = FileLock(self._lock_path, timeout=LOCK_TIMEOUT_S)
            self._lock_pid = os.getpid()
        with self._lock.acquire(blocking=wait):
            yield

    def read(self) -> KeyedRows:
        """Every valid vector in the two files, without the lock (see the module's doc)."""
        out = KeyedRows()
        for _ in range(_READ_TRIES):
            before = _stamp(self.npz)
            out = KeyedRows()
            try:
                if before is not None:
                    out = _read_cache_file(self.npz)
            except Exception as exc:  # cache is disposable
                log.warning("ignoring unreadable embedding cache %s: %s", self.npz, exc)
            self._side_read, self._side_seen = 0, None
            out.update(of_width(self._read_side(), out.width, self.side))
            self._npz_seen = before
            if _stamp(self.npz) == before:
                break
        return out

    def changed(self) -> bool:
        """Another process wrote either file since this one last looked (two ``stat`` calls)."""
        return _stamp(self.npz) != self._npz_seen or _stamp(self.side) != self._side_seen

    def read_new(self) -> dict[str, np.ndarray]:
        """Caller holds the lock: the records others appended since this process last looked.
        After another's rewrite, its new side file from the start (the .npz marked stale)."""
        npz = _stamp(self.npz)
        if npz is None and self._npz_seen is not None:
            return {}  # removed (``removed``): left for the next save to see
        if npz != self._npz_seen:
            self.npz_stale = self.npz_stale or npz is not None
            self._npz_seen, self._side_read, self._side_seen = npz, 0, None
        side = _stamp(self.side)
        if side is None:
            self._side_read, self._side_seen = 0, None
            return {}
        if side == self._side_seen:
            return {}
        if self._side_seen is None or side[0] != self._side_seen[0] or side[1] < self._side_read:
            self._side_read = 0  # not the file read before: from its start
        return self._read_side()

    @property
    def removed(self) -> bool:
        """The .npz this process read or wrote is gone (memory_wipe removed the cache):
        what it holds is not to be written back."""
        return self._npz_seen is not None and not self.npz.exists()

    def read_npz(self) -> KeyedRows:
        """Caller holds the lock: the .npz as it is now (another process rewrote it)."""
        try:
            return _read_cache_file(self.npz) if self.npz.exists() else KeyedRows()
        except Exception as exc:  # cache is disposable
            log.warning("ignoring unreadable embedding cache %s: %s", self.npz, exc)
            return KeyedRows()

    def _read_side(self) -> dict[str, np.ndarray]:
        """The valid records of the side file from ``_side_read`` on; a torn last record is
        left out (an append in flight, or a crashed one)."""
        try:
            with self.side.open("rb") as f:
                stamp = _fstamp(f.fileno())
                width = _side_width(f.read(_SIDE_HEADER))
                if width is None:  # not one of this version's (warned once per change)
                    if stamp[1] and stamp != self._side_seen:
                        log.warning("ignoring embedding cache side file %s: not ours", self.side)
                    self._side_seen = stamp
                    return {}
                start = max(self._side_read, _SIDE_HEADER)
                f.seek(start)
                out, spanned = _records(f.read(), width)
        except FileNotFoundError:
            return {}
        except Exception as exc:  # cache is disposable
            log.warning("ignoring unreadable embedding cache side file %s: %s", self.side, exc)
            return {}
        self._side_read, self._side_seen = start + spanned, stamp
        return out

    def append(self, rows: dict[str, np.ndarray], width: int, held: int) -> bool:
        """Caller holds the lock and has read what others appended: ``rows`` appended to the
        side file; False when the .npz is to be rewritten instead (none yet, another width in
        the side file, or more than a quarter of the ``held`` vectors there)."""
        if not self.npz.exists():
            return False
        if not rows:
            return True
        records = _side_records(width)
        with self.side.open("ab+") as f:
            f.seek(0)
            head = f.read(_SIDE_HEADER)
            size = f.seek(0, os.SEEK_END)
            if size and _side_width(head) != width:
                return False
            whole = (size - _SIDE_HEADER) // records.itemsize if size else 0
            if (whole + len(rows)) * 4 > held:  # a quarter of the cache: rewrite it
                return False
            out = np.empty(len(rows), dtype=records)
            out["key"] = [bytes.fromhex(k) for k in rows]
            out["vec"] = list(rows.values())
            if not size:
                f.write(_SIDE_MAGIC + width.to_bytes(4, "little"))
            elif size != _SIDE_HEADER + whole * records.itemsize:
                f.truncate(_SIDE_HEADER + whole * records.itemsize)  # a crashed append: cut
            f.write(out.tobytes())
            f.flush()
            self._side_read, self._side_seen = f.tell(), _fstamp(f.fileno())
        return True

    def rewrite(self, vectors: KeyedRows) -> None:
        """Caller holds the lock: ``vectors`` into the .npz (atomic replace), then no side file.
        A crash between the two leaves vectors held twice, the same ones."""
        names, vecs = vectors.arrays()
        keys = np.array(names, dtype=object).astype(str)
        tmp = self.npz.with_name(f"{self.npz.name}.{os.getpid()}.tmp.npz")
        try:
            np.savez(tmp, keys=keys, vectors=vecs.astype(np.float32))
            os.replace(tmp, self.npz)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise
        self.side.unlink(missing_ok=True)  # its vectors are in the file now
        self._npz_seen, self._side_seen, self._side_read = _stamp(self.npz), None, 0
        self.npz_stale = False


__all__ = ["LOCK_TIMEOUT_S", "NORM_TOLERANCE", "CacheFiles", "good_rows", "of_width", "side_path"]
