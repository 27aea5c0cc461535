"""What a parse of ``issues.jsonl`` found, kept for the next process that reads the same bytes.

Every process that opened the tracker parsed the whole file (14.5k issues, 15 MB at 100k
memories: about 0.5 CPU s) to answer a query for a handful of open issues. The cache holds, for
each line of one version of the file, its issue's id, status, labels and dedupe key, and where
the line starts and ends; a reader whose bytes hash the same (the git blob sha of the bytes:
any other byte, another length, and the cache is not used) holds the lines as those stretches
of the bytes (``issue_lines``) and decodes and reads an issue's line only when that issue is
wanted (``issue_map``). Only clean files are kept: no unreadable line, every id
in its file order, no dedupe key that is not a string; anything else is parsed as before.

The file lives in ``.git/`` beside the tracker's lock (never an untracked file), is replaced
atomically, and carries its own CRC and the interpreter's marshal tag: a torn, foreign or stale
cache is ignored and rewritten by the next parse.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
import marshal
import os
import sys
import tempfile
import zlib
from array import array
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cortexgraph.storage.beads.issue_lines import IssueLines, line_spans
from cortexgraph.storage.beads.issue_map import STATUS, IssueMap, KeptIssues, holders_of
from cortexgraph.storage.beads.schema import DEDUPE_KEY

if TYPE_CHECKING:
    from cortexgraph.storage.beads.issue_file import ParsedIssueFile

log = logging.getLogger(__name__)

MAGIC = b"cortexgraph beads parse 5\n"
_TAG = (sys.implementation.cache_tag or "python").encode("ascii") + b"\n"


def bytes_key(data: bytes) -> bytes:
    """The git blob sha of ``data``: what ``git hash-object`` names these bytes (2.5 MB at
    10k memories: 1.2 ms; 15 MB at 100k: 11 ms). The caller keeps it beside the bytes
    (``IssueFile``'s versions): a run hashes the file it read to load the kept parse, and its
    commit matches HEAD's blob against that same file. (A memo here, by object, kept the last
    two files alive, 2 x 15 MB, in a server long after their tracker was gone.)"""
    digest = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
    digest.update(data)
    return digest.digest()


def load_parsed(path: Path, data: bytes, key: bytes) -> ParsedIssueFile | None:
    """The file ``data`` (``key``: its ``bytes_key``) as parsed before, its issues unread;
    None if the cache is not for these bytes (or is missing, torn, or written by another
    interpreter)."""
    from cortexgraph.storage.beads.issue_file import ParsedIssueFile

    try:
        raw = path.read_bytes()
    except OSError:
        return None
    head = len(MAGIC) + len(_TAG)
    if len(raw) < head + 8 or raw[: len(MAGIC)] != MAGIC or raw[len(MAGIC) : head] != _TAG:
        return None
    crc = int.from_bytes(raw[head : head + 4], "big")
    size = int.from_bytes(raw[head + 4 : head + 8], "big")
    body = raw[head + 8 :]
    if len(body) != size or zlib.crc32(body) != crc:
        return None
    try:
        (kept_key, ids, numbers, statuses, labels, dedupe_keys, by_label, holders, raw_spans) = (
            marshal.loads(body)
        )
    except (EOFError, ValueError, TypeError):
        return None
    if kept_key != key:
        return None
    # The same bytes as the parse kept: valid UTF-8, and its lines at the spans kept (never
    # decoded or split here: a line is read when its issue is wanted).
    spans: array[int] = array("q")
    try:
        spans.frombytes(raw_spans)
    except (TypeError, ValueError):
        return None
    if (spans and spans[-1] > len(data)) or not (
        len(ids) == len(numbers) == len(statuses) == len(labels) == len(dedupe_keys)
    ):
        return None
    starts, ends = spans[0::2], spans[1::2]
    kept = KeptIssues(
        data,
        ids,
        ([starts[n] for n in numbers], [ends[n] for n in numbers]),
        statuses,
        labels,
        dedupe_keys,
        by_label,
        holders,
    )
    return ParsedIssueFile(
        IssueLines(data=data, spans=spans),
        IssueMap(kept=kept),
        dict(zip(ids, numbers, strict=True)),
    )


def save_parsed(path: Path, data: bytes, key: bytes, snap: ParsedIssueFile) -> None:
    """Keep ``snap`` (the parse of ``data``: ``snap.to_bytes() == data``; ``key``: its
    ``bytes_key``) for the next reader, if it is clean; best effort, a cache that cannot be
    written is only not there."""
    columns = _columns(snap)
    if columns is None:
        return
    spans = line_spans(data)
    if len(spans) != 2 * len(snap.lines):  # lines joined on reading: theirs is the parse's
        return
    body = marshal.dumps((key, *columns, spans.tobytes()))
    header = MAGIC + _TAG + zlib.crc32(body).to_bytes(4, "big") + len(body).to_bytes(4, "big")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".beads-parse.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(header + body)
        os.replace(tmp, path)
    except OSError as e:
        log.debug("could not keep the issues' parse in %s: %s", path, e)
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _columns(snap: ParsedIssueFile) -> tuple[Any, ...] | None:
    """Each issue's id, line number, status, labels and dedupe key, in file order, and each
    label's issues (by that order); None if the file is not clean."""
    if snap.unreadable or snap.quarantined:
        return None
    since = snap.issues.kept_since()
    if since is not None:
        return _patched_columns(snap, *since)
    columns: tuple[list[Any], ...] = ([], [], [], [], [])
    ids, numbers, statuses, labels, dedupe_keys = columns
    by_label: dict[str, list[int]] = {}
    line_of = snap.line_of
    previous = -1
    for issue_id, status, have, dedupe_key in snap.issues.summaries():
        number = line_of[issue_id]
        if number < previous:  # an id first seen above its last line: its place is the parse's
            return None
        if dedupe_key is not None and not isinstance(dedupe_key, str):
            return None
        previous = number
        ids.append(issue_id)
        numbers.append(number)
        statuses.append(status)
        labels.append(tuple(have))
        dedupe_keys.append(dedupe_key)
        for label in (*dict.fromkeys(have), STATUS + status):
            by_label.setdefault(label, []).append(len(ids) - 1)
    return (*columns, by_label, holders_of(zip(ids, statuses, labels, dedupe_keys, strict=True)))


def _patched_columns(
    snap: ParsedIssueFile, kept: KeptIssues, changed: list[str]
) -> tuple[Any, ...] | None:
    """``_columns`` of a file read from a kept parse: its columns with the issues set since
    put in (a run changes 70 of 2,364 issues at 10k memories), not made again from every
    issue. The map's order is the kept issues' in theirs, then the new ones as first set."""
    ids, statuses, labels = list(kept.ids), list(kept.statuses), list(kept.labels)
    dedupe_keys = list(kept.dedupe_keys)
    by_label = {label: list(places) for label, places in kept.by_label.items()}
    holders: dict[str, str] | None = dict(kept.holders)
    for issue_id in changed:
        issue = snap.issues[issue_id]
        key = issue.metadata.get(DEDUPE_KEY)
        if key is not None and not isinstance(key, str):
            return None
        have = tuple(issue.labels)
        new = (*dict.fromkeys(have), STATUS + issue.status)
        k = kept.place.get(issue_id)
        if k is None:  # opened since: after every kept issue
            k = len(ids)
            ids.append(issue_id)
            statuses.append(issue.status)
            labels.append(have)
            dedupe_keys.append(key)
            for label in new:
                by_label.setdefault(label, []).append(k)
            if holders is not None and key is not None and issue.status != "tombstone":
                holders.setdefault(key, issue_id)
            continue
        old = (*dict.fromkeys(labels[k]), STATUS + statuses[k])
        if (dedupe_keys[k], statuses[k] == "tombstone") != (key, issue.status == "tombstone"):
            holders = None  # who holds a key first may have changed: counted again below
        for label in old:
            if label not in new:
                by_label[label].remove(k)
        for label in new:
            if label not in old:
                bisect.insort(by_label.setdefault(label, []), k)
        statuses[k], labels[k], dedupe_keys[k] = issue.status, have, key
    numbers = [snap.line_of[issue_id] for issue_id in ids]
    if numbers != sorted(numbers):  # an id first seen above its last line
        return None
    if holders is None:
        holders = holders_of(zip(ids, statuses, labels, dedupe_keys, strict=True))
    return ids, numbers, statuses, labels, dedupe_keys, by_label, holders


__all__ = ["bytes_key", "load_parsed", "save_parsed"]
