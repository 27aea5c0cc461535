"""An embedding cache's vectors by key: the rows of the matrix its file held, then those added.

The cache file's vectors are read as one matrix (storage/embedding_files.py) and a dict gives
each key its row. A vector object per row, made as the file was read, cost about as much as
the dict (10k rows), and a reader of many rows stacked them one by one (0.75 us a row: an
incremental cluster step's 4,791 rows were 3-5 ms): ``gather`` takes rows from the matrix at C
speed. The vectors added since (the side file's, the model's) are held one by one.

The matrix is never written (it is made read-only): every answer given from it shares it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np

_NO_ROWS = np.zeros((0, 0), dtype=np.float32)


class KeyedRows:
    """A mapping of key -> vector (float32, 1-D): rows of ``matrix`` (``row``: key -> row
    number; rows no key names are left out), and vectors ``added`` since."""

    __slots__ = ("added", "matrix", "row")

    def __init__(self, matrix: np.ndarray | None = None, row: dict[str, int] | None = None):
        self.row: dict[str, int] = {} if row is None else row
        # A matrix no key names holds no vector, so its width is not the cache's: kept, it
        # would stand under the rows ``gather`` places, of the model's width, and refuse them.
        self.matrix = _NO_ROWS if matrix is None or not self.row else matrix
        # Every row handed out is a view of it: a caller that wrote into one would change the
        # cache for every later reader, so a write fails instead.
        self.matrix.flags.writeable = False
        self.added: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.row) + len(self.added)

    @property
    def width(self) -> int | None:
        """The vectors' width (the matrix's where a key names a row of it); None if none."""
        if self.row:
            return int(self.matrix.shape[1])
        return len(next(iter(self.added.values()))) if self.added else None

    def __contains__(self, key: object) -> bool:
        return key in self.row or key in self.added

    def __iter__(self) -> Iterator[str]:
        return itertools.chain(self.row, self.added)

    def __getitem__(self, key: str) -> np.ndarray:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def get(self, key: str) -> np.ndarray | None:
        at = self.row.get(key)
        return self.added.get(key) if at is None else self.matrix[at]

    def __setitem__(self, key: str, vector: np.ndarray) -> None:
        self.row.pop(key, None)  # the later vector stands, as in a dict
        self.added[key] = vector

    def update(self, vectors: Mapping[str, np.ndarray] | KeyedRows) -> None:
        for key, vector in vectors.items():
            self[key] = vector

    def items(self) -> Iterator[tuple[str, np.ndarray]]:
        matrix = self.matrix
        for key, at in self.row.items():
            yield key, matrix[at]
        yield from self.added.items()

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, np.ndarray]]) -> KeyedRows:
        """The vectors of (key, vector) pairs, each held alone (no matrix)."""
        out = cls()
        out.added = dict(pairs)
        return out

    def lacking(self, keys: Iterable[str]) -> set[str]:
        """The keys (distinct) not held, found at C speed."""
        return {key for key in set(keys).difference(self.row) if key not in self.added}

    def copy(self) -> KeyedRows:
        """Another mapping of the same vectors (the matrix shared)."""
        out = KeyedRows(self.matrix, dict(self.row))
        out.added = dict(self.added)
        return out

    def each(self, keys: Sequence[str]) -> list[np.ndarray]:
        """Each key's vector; KeyError for a key not held (one pass, no check before it)."""
        matrix, added = self.matrix, self.added
        rows = map(self.row.get, keys)
        return [
            added[key] if at is None else matrix[at] for key, at in zip(keys, rows, strict=True)
        ]

    def gather(
        self, keys: Sequence[str], served: Mapping[str, np.ndarray] | None = None
    ) -> GatheredRows:
        """The vectors of ``keys``, to be read as rows of one matrix: every key held, or
        in ``served`` (vectors answered but not held), which stands first; KeyError for a key
        in neither."""
        rows = np.fromiter(map(self.row.get, keys, itertools.repeat(-1)), np.intp, len(keys))
        if served:
            rows[[k for k, key in enumerate(keys) if key in served]] = -1
        loose: dict[int, np.ndarray] = {}
        for k in np.flatnonzero(rows < 0).tolist():
            key = keys[k]
            vector = served.get(key) if served else None
            loose[k] = self.added[key] if vector is None else vector
        return GatheredRows(self.matrix, rows, loose)

    def arrays(self) -> tuple[list[str], np.ndarray]:
        """The keys and their vectors stacked (for a rewrite of the cache file)."""
        keys = list(self)
        if not keys:
            return keys, np.zeros((0, self.matrix.shape[1] or 384), dtype=np.float32)
        return keys, self.gather(keys)[:]


class GatheredRows:
    """Vectors as rows of a matrix read on demand: ``gathered[index]`` is a new float32
    array of the rows ``index`` (a slice or positions) selects. ``rows``: each one's row of
    ``matrix``, -1 where ``loose`` holds it instead (position -> vector)."""

    def __init__(self, matrix: np.ndarray, rows: np.ndarray, loose: dict[int, np.ndarray]):
        self.matrix, self.rows, self.loose = matrix, rows, loose

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: slice | np.ndarray) -> np.ndarray:
        picked = np.arange(len(self.rows))[index]
        rows = self.rows[picked]
        if not self.loose:
            out: np.ndarray = self.matrix.take(rows, axis=0)
            return out
        if len(self.matrix):  # the loose rows' places hold row 0 until they are written
            out = self.matrix.take(np.maximum(rows, 0), axis=0)
        else:
            width = len(next(iter(self.loose.values())))
            out = np.empty((len(picked), width), dtype=np.float32)
        places = np.flatnonzero(rows < 0)
        for place, at in zip(places.tolist(), picked[places].tolist(), strict=True):
            out[place] = self.loose[at]
        return out


__all__ = ["GatheredRows", "KeyedRows"]
