"""The issues of one parsed ``issues.jsonl``, each read into a ``BeadsIssue`` when first asked for.

A file whose bytes were parsed before (``parse_cache``) is known to hold valid lines: their
ids, statuses, labels and dedupe keys come from the cache, and a line is read whole only when
its issue is wanted. A run's query for the open issues of one label reads those few lines, not
the 14.5k closed merge issues of a 100k store (0.5 CPU s a process). Issues parsed or changed
in this process are held as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any

from cortexgraph.storage.beads import issue_lines
from cortexgraph.storage.beads.schema import DEDUPE_KEY, BeadsIssue, issue_from_line
from cortexgraph.storage.errors import StorageError


class KeptIssues:
    """The issues of a kept parse, as columns by their order in the file: each one's status,
    labels and dedupe key (only str keys are kept), and the stretch of ``data`` holding its
    line. Never changed once made; the maps made from it share it."""

    __slots__ = ("data", "dedupe_keys", "ends", "labels", "starts", "statuses")

    def __init__(
        self,
        data: bytes,
        starts: Sequence[int],
        ends: Sequence[int],
        statuses: Sequence[str],
        labels: Sequence[tuple[str, ...]],
        dedupe_keys: Sequence[str | None],
    ) -> None:
        self.data = data
        self.starts, self.ends = starts, ends
        self.statuses, self.labels, self.dedupe_keys = statuses, labels, dedupe_keys

    def line(self, k: int) -> str:
        return issue_lines.decode_line(self.data, self.starts[k], self.ends[k])


class IssueMap(MutableMapping[str, BeadsIssue]):
    """id -> issue, in the file's order (an id's first line), each issue its last line's.

    An issue of a kept parse is held as its place in ``kept`` (an int) until it is read: a
    file of 2,364 issues is a dict of ints, not 2,364 objects made for a query that wants 3.
    """

    __slots__ = ("_items", "_kept")

    def __init__(
        self,
        items: Mapping[str, BeadsIssue | int] | None = None,
        kept: KeptIssues | None = None,
    ) -> None:
        self._items: dict[str, BeadsIssue | int] = dict(items or {})
        self._kept = kept

    def __getitem__(self, issue_id: str) -> BeadsIssue:
        held = self._items[issue_id]
        if isinstance(held, int):
            assert self._kept is not None
            issue = issue_from_line(self._kept.line(held))
            if issue is None or issue.id != issue_id:  # only a bug could get here
                raise StorageError(f"the parse cache named {issue_id!r} for another line")
            self._items[issue_id] = held = issue  # the same value for every reader
        return held

    def __setitem__(self, issue_id: str, issue: BeadsIssue) -> None:
        self._items[issue_id] = issue

    def __delitem__(self, issue_id: str) -> None:
        del self._items[issue_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, issue_id: object) -> bool:
        return issue_id in self._items

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"IssueMap({len(self._items)} issues)"

    def copy(self) -> IssueMap:
        return IssueMap(self._items, self._kept)

    def summaries(self) -> Iterator[tuple[str, str, tuple[str, ...], Any]]:
        """(id, status, labels, dedupe key as stored) of every issue, none read for it."""
        kept = self._kept
        for issue_id, held in self._items.items():
            if isinstance(held, int):
                assert kept is not None
                yield issue_id, kept.statuses[held], kept.labels[held], kept.dedupe_keys[held]
            else:
                yield issue_id, held.status, held.labels, held.metadata.get(DEDUPE_KEY)

    def matching(self, labels: set[str], status_ok: Callable[[str], bool]) -> list[BeadsIssue]:
        """The issues carrying all ``labels`` whose status passes, in order; only they are read."""
        return [
            self[issue_id]
            for issue_id, status, have, _ in self.summaries()
            if status_ok(status) and labels.issubset(have)
        ]


__all__ = ["IssueMap", "KeptIssues"]
