"""The issues of one parsed ``issues.jsonl``, each read into a ``BeadsIssue`` when first asked for.

A file whose bytes were parsed before (``parse_cache``) is known to hold valid lines: their
ids, statuses, labels and dedupe keys come from the cache, and a line is read whole only when
its issue is wanted. A run's query for the open issues of one label reads those few lines, not
the 14.5k closed merge issues of a 100k store (0.5 CPU s a process). Issues parsed or changed
in this process are held as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any

from cortexgraph.storage.beads import issue_lines
from cortexgraph.storage.beads.schema import DEDUPE_KEY, BeadsIssue, issue_from_line
from cortexgraph.storage.errors import StorageError


class UnreadIssue:
    """A line known to hold a valid issue, with what a query filters on; the line's text is
    the bytes ``source[start:end]``, decoded only when the issue is read. (A plain class: a
    frozen dataclass's ``__init__`` cost 12 us each, 0.17 s for a 100k store's issues.)"""

    __slots__ = ("dedupe_key", "end", "labels", "source", "start", "status")

    def __init__(
        self,
        source: bytes,
        start: int,
        end: int,
        status: str,
        labels: tuple[str, ...],
        dedupe_key: str | None,
    ) -> None:
        self.source = source
        self.start = start
        self.end = end
        self.status = status
        self.labels = labels
        self.dedupe_key = dedupe_key  # the metadata's dedupe key (only str keys stay unread)

    @property
    def line(self) -> str:
        return issue_lines.decode_line(self.source, self.start, self.end)


def summary_of(issue: BeadsIssue | UnreadIssue) -> tuple[str, tuple[str, ...], Any]:
    """(status, labels, dedupe key as stored) without reading the line."""
    if isinstance(issue, UnreadIssue):
        return issue.status, issue.labels, issue.dedupe_key
    return issue.status, issue.labels, issue.metadata.get(DEDUPE_KEY)


class IssueMap(MutableMapping[str, BeadsIssue]):
    """id -> issue, in the file's order (an id's first line), each issue its last line's."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, BeadsIssue | UnreadIssue] | None = None) -> None:
        self._items: dict[str, BeadsIssue | UnreadIssue] = dict(items or {})

    def __getitem__(self, issue_id: str) -> BeadsIssue:
        held = self._items[issue_id]
        if isinstance(held, UnreadIssue):
            issue = issue_from_line(held.line)
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
        return IssueMap(self._items)

    def held(self) -> Iterator[tuple[str, BeadsIssue | UnreadIssue]]:
        """Each id with its issue as held now (read or not), in order."""
        return iter(self._items.items())

    def summaries(self) -> Iterator[tuple[str, str, tuple[str, ...], Any]]:
        """(id, status, labels, dedupe key) of every issue, none read for it."""
        for issue_id, held in self._items.items():
            yield (issue_id, *summary_of(held))

    def matching(self, labels: set[str], status_ok: Callable[[str], bool]) -> list[BeadsIssue]:
        """The issues carrying all ``labels`` whose status passes, in order; only they are read."""
        return [
            self[issue_id]
            for issue_id, status, have, _ in self.summaries()
            if status_ok(status) and labels.issubset(have)
        ]


__all__ = ["IssueMap", "UnreadIssue", "summary_of"]
