"""The sidecar cache of sentence vectors, keyed by (model, content hash), checked on load.

The cache file is a convenience, not a source of truth: every row read from it must be a
finite, unit-length vector (the Embedder protocol's promise) of the cache's one width, keyed by
a content hash; anything else is dropped (and re-embedded when next needed). A fresh vector
with a NaN or infinity is served as zeros (no similarity) and never cached. A vector of another
width than the model's, from a cache written by another model or a hand edit, is dropped as
soon as the model's width is known; one of another width than the vectors held (a side file
beside a cache file of another width) is left out when read. So a damaged cache can cost time,
never a crashed or distorted search.

A run that embeds a few new texts does not rewrite the whole file (150 MB at 100k memories,
1.2 CPU s): their vectors are appended to a side file (storage/embedding_files.py, which also
says how processes sharing the files stay safe). The ``.npz`` is rewritten whole, and the side
file removed, when the side file would hold more than a quarter of the vectors, when its width
is not the model's, or when vectors were dropped (a new model width).

Another process's vectors reach this one: ``missing`` and ``held`` first take in what others
appended since this process looked (two ``stat`` calls when nothing changed), so the MCP server
finds the vectors a consolidation run embedded, and a run those the server's background
embedder saved after its last batch.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from cortexgraph.storage.embedding_files import (
    NORM_TOLERANCE,
    CacheFiles,
    good_rows,
    of_width,
    side_path,
)
from cortexgraph.storage.keyed_rows import GatheredRows, KeyedRows

if TYPE_CHECKING:
    from cortexgraph.storage.protocol import Embedder

log = logging.getLogger(__name__)

_T = TypeVar("_T")
Served = dict[str, np.ndarray]  # key -> a vector answered that the cache need not hold

_KEYS_SPARE = 16_384  # texts remembered beyond twice the vectors held (``EmbeddingCache.keys``)


# Each text's hasher is a copy of this one: setting a blake2b up was two thirds of hashing
# a memory's text (0.46 of 0.7 us; a cluster step hashes every active memory's text).
_KEY_HASH = hashlib.blake2b(digest_size=16)


def text_key(text: str) -> str:
    hasher = _KEY_HASH.copy()
    hasher.update(text.encode("utf-8"))
    return hasher.hexdigest()


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
        self._loaded: KeyedRows | None = None
        self._dirty = False
        # Keys added since the file was read or written: appended to the side file on save.
        # None: the file must be rewritten whole (vectors were dropped).
        self._added: dict[str, None] | None = {}
        self._files = (
            CacheFiles(Path(directory) / f".embeddings-{_safe(embedder.name)}.npz")
            if directory
            else None
        )
        self._save_lock = threading.Lock()  # one save at a time; outside _lock (file I/O)
        # Width of the vectors held; the model's first answer settles it (others dropped).
        self._width: int | None = None
        # Texts answered from the vectors held, and texts the model embedded, since this cache
        # was made: a caller reads the difference across a job (what it reused, what it cost).
        self.hits = 0
        self.embedded = 0
        # Per thread: a consolidation run asks from its own thread while the MCP server's
        # background embedder fills the same cache, and the run reports only its own asks.
        self._tallies = threading.local()
        # text -> text_key: one run asks for the same texts in several steps (``missing``
        # before embedding, ``held`` then ``embed`` text by text in the cluster step), and a
        # hash is 1.2 us a text where a lookup is 0.08 (``keys``).
        self._key_of: dict[str, str] = {}

    def tally_this_thread(self) -> CacheTally:
        """A fresh tally of what the calling thread asks from now on (until its next call)."""
        tally = CacheTally()
        self._tallies.current = tally
        return tally

    def _tally(self) -> CacheTally:
        tally: CacheTally | None = getattr(self._tallies, "current", None)
        return tally if tally is not None else CacheTally()

    @property
    def _vectors(self) -> KeyedRows:
        loaded = self._loaded
        if loaded is None:
            with self._load_lock:
                loaded = self._loaded
                if loaded is None:
                    loaded = self._read()
                    self._loaded = loaded
        return loaded

    def _read(self) -> KeyedRows:
        return KeyedRows() if self._files is None else self._files.read()

    def _catch_up(self) -> None:
        """Take in the vectors other processes appended since this one looked. Never waits:
        while another holds the files' lock (it is writing), the next call looks again."""
        files = self._files
        if files is None or self._loaded is None or not files.changed():
            return
        try:
            with files.locked(wait=False):
                self._take_in(files.read_new())
        except OSError as exc:  # filelock.Timeout, or a folder without write access
            log.debug("embedding cache: not caught up now: %s", exc)

    def _take_in(self, found: dict[str, np.ndarray] | KeyedRows) -> None:
        """Vectors read from the files: the ones this process lacks are added (of its width);
        those it holds unsaved are on disk already, so not appended again."""
        if not found:
            return
        with self._lock:
            vectors, added = self._vectors, self._added
            if added is not None:
                for key in found:
                    added.pop(key, None)
            source = self._files.npz if self._files else "(no file)"
            for key, vec in of_width(found, self._width or vectors.width, source).items():
                if key not in vectors:
                    vectors[key] = vec

    @property
    def width(self) -> int:
        if self._width is None:
            self._width = self._vectors.width or 0
        return self._width

    @width.setter
    def width(self, value: int) -> None:
        self._width = value

    @property
    def name(self) -> str:
        return self.embedder.name

    def __len__(self) -> int:
        return len(self._vectors)

    def keys(self, texts: Sequence[str]) -> list[str]:
        """Each text's ``text_key``, hashed once while this cache remembers the text.

        The texts remembered stay about those holding a vector: a call that finds more than
        twice their number (plus room for texts not embedded yet) empties the memo first, so
        texts since edited or deleted are not kept alive here. (First, not after: a first call
        for every memory's text may come before the cache file is read.)"""
        memo = self._key_of
        if len(memo) > 2 * len(self._loaded or ()) + _KEYS_SPARE:
            memo.clear()
        get = memo.get
        out: list[str] = []
        for t in texts:
            key = get(t)
            if key is None:
                key = memo[t] = text_key(t)
            out.append(key)
        return out

    def missing(self, texts: Sequence[str]) -> list[str]:
        """The distinct ``texts`` (first-seen order) that have no cached vector yet."""
        self._catch_up()
        keys = self.keys(texts)
        with self._lock:
            lacking = self._vectors.lacking(keys)  # at C speed: a server's sync asks of all
        out: dict[str, None] = {}
        if lacking:
            for t, key in zip(texts, keys, strict=True):
                if key in lacking:
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
            self._loaded = KeyedRows.of((k, v) for k, v in self._vectors.items() if len(v) == width)
            self.width, self._dirty, self._added = width, True, None
            return True

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.width or 384), dtype=np.float32)
        return self.held_rows(texts)[:]  # a gather: np.stack of ``held`` was ~1 us a row

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
        return self._hold(texts, _arrays)

    def held_rows(self, texts: Sequence[str]) -> GatheredRows:
        """``held``'s vectors as the rows of one matrix, read on demand (a new array each
        read): a reader of many (the cluster detector's comparison of the changed memories
        with every active one) takes them from the cache file's matrix at C speed, where
        stacking ``held``'s arrays cost 0.75 us a row."""
        if not texts:
            return KeyedRows().gather([])
        return self._hold(texts, KeyedRows.gather)

    def _hold(self, texts: Sequence[str], read: Callable[[KeyedRows, list[str], Served], _T]) -> _T:
        """``read(vectors, keys, served)`` of the texts' keys, under the lock in the same hold
        as the check that every one is held or ``served`` (this call's own vectors that the
        cache does not hold): a width change or a wipe by another thread between a check and
        its read would leave a key unheld (a KeyError, once). Missing texts are embedded first.

        The fast path is the read alone: a key held nowhere raises KeyError, before anything
        is counted or answered."""
        self._catch_up()
        keys = self.keys(texts)
        with self._lock:
            try:
                answer = read(self._vectors, keys, {})
            except KeyError:  # some text is not held yet
                pass
            else:
                self._count_hits(len(keys))
                return answer
        # This call's vectors, answered from here when the cache no longer holds them (another
        # thread dropped them after they were embedded): the model's, and fresh vectors too
        # bad to cache (zeros). Each round embeds keys not embedded before, so rounds end; a
        # second is rare (a width change or a wipe elsewhere dropped rows this one found).
        own: Served = {}
        counted = False
        while True:
            with self._lock:
                vectors = self._vectors
                lacking = vectors.lacking(keys)
                if not counted:
                    counted = True
                    absent = sum(key in lacking for key in keys) if lacking else 0
                    self._count_hits(len(keys) - absent)
                if lacking.issubset(own):
                    return read(vectors, keys, {key: own[key] for key in lacking})
            todo = sorted(
                {
                    key: text
                    for key, text in zip(keys, texts, strict=True)
                    if key in lacking and key not in own
                }.items()
            )
            self._embed_into(todo, own)

    def _count_hits(self, hits: int) -> None:
        self.hits += hits
        self._tally().hits += hits

    def _embed_into(self, todo: list[tuple[str, str]], own: Served) -> None:
        """The model's vectors of ``todo`` (key, text) into the cache and ``own``; one too bad
        to cache only into ``own``, as zeros."""
        vecs = np.asarray(self.embedder.embed([t for _, t in todo]), dtype=np.float32)
        if vecs.ndim != 2 or len(vecs) != len(todo):
            raise ValueError(f"embedder returned shape {vecs.shape} for {len(todo)} texts")
        self.settle_width(vecs.shape[1])
        # the model's own scale is trusted, not NaN
        ok = np.asarray(np.isfinite(vecs).all(axis=1))
        with self._lock:
            self.embedded += len(todo)
            self._tally().embedded += len(todo)
            for (key, _), vec, good in zip(todo, vecs, ok, strict=True):
                if good:
                    own[key] = self._vectors[key] = vec
                    if self._added is not None:
                        self._added[key] = None
                else:
                    own[key] = np.zeros_like(vec)
            self._dirty = True

    def save(self) -> None:
        """Write the new vectors: appended to the side file when they are few, else the whole
        cache file (atomic replace) and no side file (storage/embedding_files.py: under the
        files' lock, after taking in what other processes saved). Best effort: a cache costs
        time, never a failure, so a full disk, a read-only folder or a lock held too long is a
        warning, the half written temp file is removed (it was tens of MB left on a full disk)
        and the next save tries again. Vectors embedded meanwhile (another thread) stay to be
        saved next time."""
        with self._save_lock:
            files = self._files
            if files is None or not self._dirty:
                return
            try:
                with files.locked():
                    self._save_locked(files)
            except OSError as exc:
                log.warning("cortexgraph: cannot save embedding cache %s: %s", files.npz, exc)

    def _save_locked(self, files: CacheFiles) -> None:
        if files.removed:  # wiped (memory_wipe) while held here: not written back
            fresh = files.read()  # what was saved since, if anything
            with self._lock:
                self._loaded, self._added, self._dirty = fresh, {}, False
            return
        self._take_in(files.read_new())
        with self._lock:
            vectors, added = self._vectors, self._added
            rows = None if added is None else {k: vectors[k] for k in added}
            held, width = len(vectors), self.width
        saved: dict[str, np.ndarray] | KeyedRows
        if rows is not None and files.append(rows, width, held):
            saved = rows
        else:
            if files.npz_stale:  # another process rewrote it: its vectors are written back too
                self._take_in(files.read_npz())
            with self._lock:
                saved = self._vectors.copy()
            files.rewrite(saved)
        with self._lock:
            if self._added is None:
                self._added = {k: None for k in self._vectors if k not in saved}
            else:
                for key in saved:
                    self._added.pop(key, None)
            self._dirty = bool(self._added)

    def detach(self) -> None:
        """Write nothing more (the store's files are about to go: memory_wipe); waits for a
        save in progress."""
        with self._save_lock:
            self._files = None


def _arrays(vectors: KeyedRows, keys: list[str], served: Served) -> list[np.ndarray]:
    """``held``'s answer: each key's vector, ``served`` first; KeyError for one held nowhere."""
    if served:
        return [served[key] if key in served else vectors[key] for key in keys]
    return vectors.each(keys)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


__all__ = ["NORM_TOLERANCE", "EmbeddingCache", "good_rows", "side_path", "text_key"]
