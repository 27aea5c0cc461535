"""Per memory id, a fingerprint and a moment, as parallel arrays read as a Mapping.

What a consolidation run keeps of every memory for the next one (cortexgraph.run_state writes
and reads it, agents.changes compares and updates it): ``{id: (fingerprint, next crossing
time)}``. As a dict of tuples it cost a 10k store's run ~3 ms to build from the state file,
~7 ms to compare with the store a memory at a time, and ~3 ms to take apart again to write
(ten times that at 100k). As arrays, a run finds the rows that can have changed with a few
vector operations and touches only those; the dict is built only for a caller that looks rows
up one id at a time (``as_dict``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

PRINT_TYPE = np.uint32  # a CRC-32
DUE_TYPE = np.float64  # unix seconds; inf: never


class MemoryRows(Mapping[str, tuple[int, float]]):
    """``ids[i]`` -> ``(prints[i], due[i])``; read-only (a change makes new arrays)."""

    __slots__ = ("_rows", "due", "ids", "prints")

    def __init__(self, ids: list[str], prints: np.ndarray, due: np.ndarray) -> None:
        if not len(ids) == len(prints) == len(due):
            raise ValueError("memory rows of different lengths")
        self.ids = ids
        self.prints = prints
        self.due = due
        self._rows: dict[str, int] | None = None

    @classmethod
    def of(cls, rows: Mapping[str, tuple[int, float | None]]) -> MemoryRows:
        """The rows of a mapping (``None`` for a time, as 1.x states wrote "never": inf)."""
        if isinstance(rows, MemoryRows):
            return rows
        prints, due = tuple(zip(*rows.values(), strict=True)) or ((), ())
        if None in due:
            due = tuple(np.inf if d is None else d for d in due)
        return cls(list(rows), np.array(prints, dtype=PRINT_TYPE), np.array(due, dtype=DUE_TYPE))

    def row_of(self) -> dict[str, int]:
        """Id -> row (built on first use)."""
        if self._rows is None:
            self._rows = dict(zip(self.ids, range(len(self.ids)), strict=True))
        return self._rows

    def as_dict(self) -> dict[str, tuple[int, float]]:
        return dict(
            zip(self.ids, zip(self.prints.tolist(), self.due.tolist(), strict=True), strict=True)
        )

    def __getitem__(self, memory_id: str) -> tuple[int, float]:
        row = self.row_of()[memory_id]
        return int(self.prints[row]), float(self.due[row])

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self.row_of()

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"MemoryRows({len(self.ids)} rows)"


__all__ = ["DUE_TYPE", "PRINT_TYPE", "MemoryRows"]
