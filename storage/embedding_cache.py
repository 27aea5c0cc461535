"""The sidecar cache of sentence vectors, keyed by (model, content hash), checked on load.

The cache file is a convenience, not a source of truth: every row read from it must be a
finite, unit-length vector (the Embedder protocol's promise) of the cache's one width, keyed by
a content hash; anything else is dropped (and re-embedded when next needed). A fresh vector
with a NaN or infinity is served as zeros (no similarity) and never cached. A vector of another
width than the model's, from a cache written by another model or a hand edit, is dropped as
soon as the model's width is known. So a damaged cache can cost time, never a crashed or
distorted search.

A run that embeds a few new texts does not rewrite the whole file (150 MB at 100k memories,
1.2 CPU s): their vectors are appended to a side file, ``.embeddings-<model>.added.bin`` (a
header with the width, then fixed-size records: the 16-byte content hash and the float32
vector), read after the ``.npz``. A torn last record (a crash mid-append) is left out on read
and cut before the next append. The ``.npz`` is rewritten whole, and the side file removed,
when the side file would hold more than a quarter of the vectors, when its width is not the
model's, or when vectors were dropped (a new model width); a crash between that rewrite and
the removal leaves vectors held twice, the same ones.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from cortexgraph.storage.protocol import Embedder

log = logging.getLogger(__name__)

_KEY_RE = re.compile(r"[0-9a-f]{32}")
# Stored vectors are L2-normalised; a norm outside this band is damage, not rounding.
NORM_TOLERANCE = 0.05


def text_key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def good_rows(vectors: np.ndarray) -> np.ndarray:
    """Mask of the rows of a 2-D float array that are finite and of unit length."""
    with np.errstate(all="ignore"):
        # A row with a NaN or infinity has a non-finite square sum: one pass, no masked copy.
        norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors, dtype=np.float64))
    mask: np.ndarray = np.isfinite(norms) & (np.abs(norms - 1.0) <= NORM_TOLERANCE)
    return mask


_SIDE_MAGIC = b"CGEMBv1\n"
_SIDE_HEADER = len(_SIDE_MAGIC) + 4  # the magic, then the width (uint32, little-endian)
_KEY_BYTES = 16  # text_key's blake2b digest


def _side_records(width: int) -> np.dtype:
    return np.dtype([("key", f"V{_KEY_BYTES}"), ("vec", "<f4", (width,))])


def side_path(cache_file: Path) -> Path:
    """The append-only side file of the cache file ``cache_file`` (``….npz``)."""
    return cache_file.with_name(f"{cache_file.stem}.added.bin")


def _side_width(raw: bytes) -> int | None:
    if len(raw) < _SIDE_HEADER or raw[: len(_SIDE_MAGIC)] != _SIDE_MAGIC:
        return None
    width = int.from_bytes(raw[len(_SIDE_MAGIC) : _SIDE_HEADER], "little")
    return width if 0 < width <= 65_536 else None


def _read_side_file(path: Path) -> dict[str, np.ndarray]:
    """The valid records of a side file; a torn last record is left out."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    width = _side_width(raw)
    if width is None:
        log.warning("ignoring embedding cache side file %s: not one of this version's", path)
        return {}
    records = _side_records(width)
    n = (len(raw) - _SIDE_HEADER) // records.itemsize
    rows = np.frombuffer(raw, dtype=records, count=n, offset=_SIDE_HEADER)
    vecs, blob = rows["vec"], rows["key"].tobytes()
    ok = good_rows(vecs).tolist()
    keys = (blob[i : i + _KEY_BYTES].hex() for i in range(0, len(blob), _KEY_BYTES))
    return {key: vec for key, vec, good in zip(keys, vecs, ok, strict=True) if good}


def _read_cache_file(path: Path) -> dict[str, np.ndarray]:
    """The valid rows of a cache file (an empty dict if the file as a whole is unusable)."""
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
        return {}
    vecs = vecs.astype(np.float32, copy=False)
    ok = good_rows(vecs)
    match = _KEY_RE.fullmatch
    out = {
        key: vec
        for key, vec, good in zip(keys.astype(str).tolist(), vecs, ok.tolist(), strict=True)
        if good and match(key)
    }
    if len(out) < len(keys):
        log.warning(
            "embedding cache %s: dropped %d bad row(s) (re-embedded when needed)",
            path,
            len(keys) - len(out),
        )
    return out


@dataclass
class CacheTally:
    """What one thread asked of an ``EmbeddingCache`` since ``tally_this_thread``: texts
    answered from the vectors held, and texts the model embedded."""

    hits: int = 0
    embedded: int = 0


class EmbeddingCache:
    """Vectors keyed by (model, content hash); in memory, optionally persisted as .npz beside
    the store. Safe to share between threads; a corrupt cache file or row is ignored.

    The file is read on first use, not when the cache is made: a consolidation run with nothing
    new to compare never reads it (60 MB at 40k memories)."""

    def __init__(self, embedder: Embedder, directory: str | os.PathLike[str] | None = None):
        self.embedder = embedder
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()  # apart from _lock: the property is read under it
        self._loaded: dict[str, np.ndarray] | None = None
        self._dirty = False
        # Keys added since the file was read or written: appended to the side file on save.
        # None: the file must be rewritten whole (vectors were dropped).
        self._added: dict[str, None] | None = {}
        self._file = (
            Path(directory) / f".embeddings-{_safe(embedder.name)}.npz" if directory else None
        )
        # Width of the vectors held; the model's first answer settles it (others dropped).
        self._width: int | None = None
        # Texts answered from the vectors held, and texts the model embedded, since this cache
        # was made: a caller reads the difference across a job (what it reused, what it cost).
        self.hits = 0
        self.embedded = 0
        # Per thread: a consolidation run asks from its own thread while the MCP server's
        # background embedder fills the same cache, and the run reports only its own asks.
        self._tallies = threading.local()

    def tally_this_thread(self) -> CacheTally:
        """A fresh tally of what the calling thread asks from now on (until its next call)."""
        tally = CacheTally()
        self._tallies.current = tally
        return tally

    def _tally(self) -> CacheTally:
        tally: CacheTally | None = getattr(self._tallies, "current", None)
        return tally if tally is not None else CacheTally()

    @property
    def _vectors(self) -> dict[str, np.ndarray]:
        loaded = self._loaded
        if loaded is None:
            with self._load_lock:
                loaded = self._loaded
                if loaded is None:
                    loaded = self._read()
                    self._loaded = loaded
        return loaded

    def _read(self) -> dict[str, np.ndarray]:
        if self._file is None:
            return {}
        out: dict[str, np.ndarray] = {}
        try:
            if self._file.exists():
                out = _read_cache_file(self._file)
        except Exception as exc:  # cache is disposable
            log.warning("ignoring unreadable embedding cache %s: %s", self._file, exc)
        try:
            out.update(_read_side_file(side_path(self._file)))
        except Exception as exc:
            log.warning("ignoring unreadable embedding cache side file: %s", exc)
        return out

    @property
    def width(self) -> int:
        if self._width is None:
            self._width = next((len(v) for v in self._vectors.values()), 0)
        return self._width

    @width.setter
    def width(self, value: int) -> None:
        self._width = value

    @property
    def name(self) -> str:
        return self.embedder.name

    def __len__(self) -> int:
        return len(self._vectors)

    def missing(self, texts: Sequence[str]) -> list[str]:
        """The distinct ``texts`` (first-seen order) that have no cached vector yet."""
        with self._lock:
            known = self._vectors
            out: dict[str, None] = {}
            for t in texts:
                if t not in out and text_key(t) not in known:
                    out[t] = None
        return list(out)

    def settle_width(self, width: int) -> bool:
        """The model's vectors are ``width`` wide: drop cached ones that are not.
        True if any were dropped (callers holding rows of the old width rebuild them)."""
        with self._lock:
            if width == self.width or not self._vectors:
                self.width = width
                return False
            log.warning(
                "embedding cache: %d vector(s) of width %d, the model's is %d; re-embedding",
                len(self._vectors),
                self.width,
                width,
            )
            self._loaded = {k: v for k, v in self._vectors.items() if len(v) == width}
            self.width, self._dirty, self._added = width, True, None
            return True

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = self.held(texts)
        if not rows:
            return np.zeros((0, self.width or 384), dtype=np.float32)
        return np.stack(rows)

    def held(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's vector as ``embed`` answers it, the missing ones embedded first, but
        not stacked: the arrays this cache holds (a zero row for a fresh vector too bad to
        cache). The missing texts are embedded in key order, so each text's vector is the same
        in any order of the texts asked (the cluster detector needs no fixed batch order for
        them). Read them, never write into them: they are the next answer's too. The
        consolidation run reads the claims' vectors so (agents.held_rows): a stacked copy was
        15 MB at 10k memories, at the run's peak."""
        if not texts:  # nothing asked: the file is not read (a run where nothing changed)
            return []
        keys = [text_key(t) for t in texts]
        served: dict[str, np.ndarray] = {}  # fresh vectors too bad to cache, served as zeros
        for round_ in range(2):  # a second round only if the model's width dropped cached rows
            with self._lock:
                known, pairs = self._vectors, zip(keys, texts, strict=True)
                todo = {k: t for k, t in pairs if k not in known and k not in served}
                missing = sorted(todo.items())
                if round_ == 0:
                    hits = sum(k in known for k in keys)
                    self.hits += hits
                    self._tally().hits += hits
            if not missing:
                break
            vecs = np.asarray(self.embedder.embed([t for _, t in missing]), dtype=np.float32)
            if vecs.ndim != 2 or len(vecs) != len(missing):
                raise ValueError(f"embedder returned shape {vecs.shape} for {len(missing)} texts")
            dropped = self.settle_width(vecs.shape[1])
            # the model's own scale is trusted, not NaN
            ok = np.asarray(np.isfinite(vecs).all(axis=1))
            with self._lock:
                self.embedded += len(missing)
                self._tally().embedded += len(missing)
                for (k, _), v, good in zip(missing, vecs, ok, strict=True):
                    if good:
                        self._vectors[k] = v
                        if self._added is not None:
                            self._added[k] = None
                    else:
                        served[k] = np.zeros_like(v)
                self._dirty = True
            if not dropped:
                break
        with self._lock:
            known = self._vectors
            return [served[k] if k in served else known[k] for k in keys]

    def save(self) -> None:
        """Write the new vectors: appended to the side file when they are few, else the whole
        cache file (atomic replace) and no side file. Best effort: a cache costs time, never
        a failure, so a full disk or a read-only folder is a warning, the half written temp
        file is removed (it was tens of MB left on a full disk) and the next save tries again."""
        if self._file is None or not self._dirty:
            return
        with self._lock:
            try:
                if not self._appended():
                    self._rewrite()
            except OSError as exc:
                log.warning("cortexgraph: cannot save embedding cache %s: %s", self._file, exc)
                return
            self._dirty, self._added = False, {}

    def _appended(self) -> bool:
        """Caller holds the lock: the added vectors appended to the side file; False when the
        whole file is to be rewritten instead."""
        assert self._file is not None
        added = self._added
        if added is None or not self._file.exists():
            return False
        if not added:
            return True
        vectors = self._vectors
        width = len(vectors[next(iter(added))])
        records = _side_records(width)
        side = side_path(self._file)
        with side.open("ab+") as f:
            f.seek(0)
            head = f.read(_SIDE_HEADER)
            size = f.seek(0, os.SEEK_END)
            if size and _side_width(head) != width:
                return False
            held = (size - _SIDE_HEADER) // records.itemsize if size else 0
            if (held + len(added)) * 4 > len(vectors):  # a quarter of the cache: rewrite it
                return False
            rows = np.empty(len(added), dtype=records)
            rows["key"] = [bytes.fromhex(k) for k in added]
            rows["vec"] = [vectors[k] for k in added]
            if not size:
                f.write(_SIDE_MAGIC + width.to_bytes(4, "little"))
            elif size != _SIDE_HEADER + held * records.itemsize:
                f.truncate(_SIDE_HEADER + held * records.itemsize)  # a torn record: cut
            f.write(rows.tobytes())
        return True

    def _rewrite(self) -> None:
        """Caller holds the lock: every vector into the cache file, then no side file."""
        assert self._file is not None
        keys = np.array(list(self._vectors), dtype=object).astype(str)
        vecs = np.stack(list(self._vectors.values())) if self._vectors else np.zeros((0, 384))
        tmp = self._file.with_name(f"{self._file.name}.{os.getpid()}.tmp.npz")
        try:
            np.savez(tmp, keys=keys, vectors=vecs.astype(np.float32))
            os.replace(tmp, self._file)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise
        side_path(self._file).unlink(missing_ok=True)  # its vectors are in the file now


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


__all__ = ["NORM_TOLERANCE", "EmbeddingCache", "good_rows", "side_path", "text_key"]
