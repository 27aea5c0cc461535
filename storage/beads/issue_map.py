"""The issues of one parsed ``issues.jsonl``, each read into a ``BeadsIssue`` when first asked for.

A file whose bytes were parsed before (``parse_cache``) is known to hold valid lines: their
ids, statuses, labels and dedupe keys come from the cache, and a line is read whole only when
its issue is wanted. A run's query for the open issues of one label reads those few lines, not
the 14.5k closed merge issues of a 100k store (0.5 CPU s a process). Issues parsed or changed
in this process are held as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any

from cortexgraph.storage.beads import issue_lines
from cortexgraph.storage.beads.schema import DEDUPE_KEY, BeadsIssue, issue_from_line
from cortexgraph.storage.errors import StorageError

STATUS = "\0status:"  # in ``by_label``, before a status: the places of the issues holding it


class KeptIssues:
    """The issues of a kept parse, as columns by their order in the file: each one's id,
    status, labels and dedupe key (only str keys are kept), the stretch of ``data`` holding its
    line, and for each label (and status) the places of the issues carrying it. Never changed once made;
    the maps made from it share it."""

    __slots__ = (
        "by_label",
        "data",
        "dedupe_keys",
        "ends",
        "holders",
        "ids",
        "labels",
        "place",
        "starts",
        "statuses",
    )

    def __init__(
        self,
        data: bytes,
        ids: Sequence[str],
        spans: tuple[Sequence[int], Sequence[int]],
        statuses: Sequence[str],
        labels: Sequence[tuple[str, ...]],
        dedupe_keys: Sequence[str | None],
        by_label: Mapping[str, Sequence[int]],
        holders: Mapping[str, str],
    ) -> None:
        self.data, self.ids = data, ids
        self.starts, self.ends = spans
        self.statuses, self.labels, self.dedupe_keys = statuses, labels, dedupe_keys
        self.by_label = by_label
        self.holders = holders  # dedupe key -> the first issue not tombstoned holding it
        self.place = dict(zip(ids, range(len(ids)), strict=True))

    def line(self, k: int) -> str:
        return issue_lines.decode_line(self.data, self.starts[k], self.ends[k])


class IssueMap(MutableMapping[str, BeadsIssue]):
    """id -> issue, in the file's order (an id's first line), each issue its last line's.

    An issue of a kept parse is held as its place in ``kept`` (an int) until it is read: a
    file of 2,364 issues is a dict of ints, not 2,364 objects made for a query that wants 3.
    ``_set`` names the issues set since (in the order they were first set): the others still
    are the kept parse's, so a query by label looks only at the kept issues carrying it.
    """

    __slots__ = ("_items", "_kept", "_set")

    def __init__(
        self,
        items: Mapping[str, BeadsIssue] | None = None,
        kept: KeptIssues | None = None,
    ) -> None:
        self._items: dict[str, BeadsIssue | int] = dict(items or {})
        self._kept = kept
        self._set: dict[str, None] | None = {}  # None: an issue was deleted, no index used
        if kept is not None:
            self._items.update(kept.place)

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
        if self._set is not None and self._kept is not None:
            self._set[issue_id] = None

    def __delitem__(self, issue_id: str) -> None:
        del self._items[issue_id]
        self._set = None

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
        out = IssueMap()
        out._items, out._kept = dict(self._items), self._kept
        out._set = None if self._set is None else dict(self._set)
        return out

    def summaries(self) -> Iterator[tuple[str, str, tuple[str, ...], Any]]:
        """(id, status, labels, dedupe key as stored) of every issue, none read for it."""
        kept = self._kept
        for issue_id, held in self._items.items():
            if isinstance(held, int):
                assert kept is not None
                yield issue_id, kept.statuses[held], kept.labels[held], kept.dedupe_keys[held]
            else:
                yield issue_id, held.status, held.labels, held.metadata.get(DEDUPE_KEY)

    def kept_since(self) -> tuple[KeptIssues, list[str]] | None:
        """The kept parse this map was made from and the issues set since, in the order they
        were first set; None if it was not made from one (or an issue was deleted)."""
        if self._kept is None or self._set is None:
            return None
        return self._kept, list(self._set)

    def dedupe_holders(self) -> dict[str, str]:
        """Each dedupe key -> the first issue in file order holding it, tombstones left out;
        a copy of the kept parse's when no issue was set since."""
        if self._kept is not None and self._set == {}:
            return dict(self._kept.holders)
        return holders_of(self.summaries())

    def matching(
        self, labels: set[str], status_ok: Callable[[str], bool], status: str | None = None
    ) -> list[BeadsIssue]:
        """The issues carrying all ``labels`` whose status passes (``status_ok``; ``status``
        if only that one can), in order; only they are read.

        With a kept parse, its issues holding the rarest of ``labels`` and ``status``, and the
        issues set since, are looked at, not every issue (14.5k closed merge issues at 100k
        memories, 36 open ones)."""
        kept, changed = self._kept, self._set
        if kept is None or changed is None or not (labels or status):
            return [
                self[issue_id]
                for issue_id, status, have, _ in self.summaries()
                if status_ok(status) and labels.issubset(have)
            ]
        hits: list[tuple[int, str]] = []
        places = [kept.by_label.get(label, ()) for label in labels]
        if status is not None:
            places.append(kept.by_label.get(STATUS + status, ()))
        for k in min(places, key=len):
            issue_id = kept.ids[k]
            if issue_id in changed:
                continue
            if status_ok(kept.statuses[k]) and labels.issubset(kept.labels[k]):
                hits.append((k, issue_id))
        after = len(kept.ids)  # an issue new since comes after every kept one, in its order
        for n, issue_id in enumerate(changed):
            held = self[issue_id]
            if status_ok(held.status) and labels.issubset(held.labels):
                hits.append((kept.place.get(issue_id, after + n), issue_id))
        hits.sort()
        return [self[issue_id] for _, issue_id in hits]


def holders_of(summaries: Iterable[tuple[str, str, tuple[str, ...], Any]]) -> dict[str, str]:
    """Dedupe key -> holder over ``(id, status, labels, dedupe key)`` rows in file order."""
    holders: dict[str, str] = {}
    for issue_id, status, _, key in summaries:  # no issue read for it
        if key is not None and status != "tombstone":
            holders.setdefault(str(key), issue_id)
    return holders


__all__ = ["IssueMap", "KeptIssues", "holders_of"]
