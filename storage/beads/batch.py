"""One git commit for many issue changes: the state of an open ``BeadsTracker.batch``.

Inside a batch every change still takes the tracker's inter-process lock and sees the file as it
is now (so a claim stays atomic against another process), but instead of rewriting the whole
file and committing, it appends the issue's new line to ``issues.jsonl`` and keeps the file's
canonical form in memory. Whether anyone else wrote since our last change is known without
reading the file: every writer of ours stamps a fresh token into a small generation file under
the lock, and an editor outside cortexgraph changes the file's inode, size or mtime. Only then
is the file read again. Closing the batch writes the canonical file (each issue once, where it
first appeared, with its latest content) and commits it once; the message lists every change,
one line per issue, so ``git log -p`` still reads issue by issue.

While a batch is open the file may hold an issue on more than one line; every reader of ours
takes the last one, and the next write of anyone's folds them (:func:`compacted`).

Batches nest: an inner block (one agent inside a consolidation run's batch) joins the outer
one, and its changes are listed under its own author in the one commit's message.
"""

from __future__ import annotations

import os
import secrets
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from cortexgraph.storage.beads.errors import IssueRecordError
from cortexgraph.storage.beads.issue_file import IssueFile, ParsedIssueFile
from cortexgraph.storage.beads.schema import DEDUPE_KEY, BeadsIssue, issue_from_line, issue_to_line
from cortexgraph.storage.errors import StorageError
from cortexgraph.storage.file_cursor import append_whole


def compacted(snap: ParsedIssueFile) -> ParsedIssueFile:
    """``snap`` with each issue on one line: its first position, its last content.

    Lines that are neither an issue's last line nor unreadable are parsed again (foreign
    ``_type`` records and earlier copies of an issue); a file without copies is returned as is.
    """
    if len(snap.line_of) + len(snap.unreadable) == len(snap.lines):
        return snap  # every line is an issue's last or unreadable: none is read for this
    last = {i: issue_id for issue_id, i in snap.line_of.items()}
    bad = {n - 1 for n, _ in snap.unreadable}
    first: dict[str, int] = {}
    dropped: set[int] = set()
    for i in range(len(snap.lines)):
        if i in last or i in bad:
            continue
        try:
            issue = issue_from_line(snap.lines[i])
        except IssueRecordError:
            continue
        if issue is not None and issue.id in snap.line_of:
            first.setdefault(issue.id, i)
            dropped.add(i)
    if not dropped:
        return snap
    out = ParsedIssueFile(issues=snap.issues.copy())
    why = {n - 1: reason for n, reason in snap.unreadable}
    first_at = {i: issue_id for issue_id, i in first.items()}
    for i, line in enumerate(snap.lines):
        issue_id = last.get(i)
        if i in dropped:
            if i not in first_at:
                continue
            issue_id = first_at[i]
            line = snap.lines[snap.line_of[issue_id]]
        elif issue_id is not None and issue_id in first:
            continue  # its content moved up to where it first appeared
        if issue_id is not None:
            out.line_of[issue_id] = len(out.lines)
        elif i in why:
            out.unreadable.append((len(out.lines) + 1, why[i]))
        out.lines.append(line)
    return out


@dataclass(slots=True)
class BatchState:
    """What one open batch knows: the canonical snapshot and the changes not yet committed."""

    author: str
    depth: int = 1
    snapshot: ParsedIssueFile | None = None
    changes: list[str] = field(default_factory=list)  # one subject line per change
    by: list[str] = field(default_factory=list)  # who made each change: the innermost block
    # the open inner blocks: (author, how many changes the batch held when the block opened)
    _inner: list[tuple[str, int]] = field(default_factory=list)
    keys: dict[str, str] = field(default_factory=dict)  # dedupe key -> holder's id
    # issues.jsonl (inode, size, mtime_ns) as we left it; before our first change: as the
    # batch found it (``opened``)
    _seen: tuple[int, int, int] | None = None
    _token: str = ""  # what we last wrote into the generation file
    # someone else wrote the file while the batch was open (a consolidation run's state must
    # not take the file as seen: cortexgraph.run_state.written_by_others)
    others_wrote: bool = False

    @classmethod
    def opened(cls, author: str, path: Path) -> BatchState:
        """A batch that starts from the file as it is now."""
        return cls(author, _seen=_key(path))

    @property
    def left(self) -> tuple[int, int, int] | None:
        """The file as the batch's last change (or commit) left it; None: no file."""
        return self._seen

    def current(self, file: IssueFile, generation: Path) -> ParsedIssueFile:
        """The file's content now (caller holds the lock); read again only if someone wrote."""
        if self.snapshot is not None and self._unchanged(file.path, generation):
            return self.snapshot
        if self.snapshot is not None or _key(file.path) != self._seen:
            self.others_wrote = True
        loaded = file.load()
        snap = compacted(loaded)
        if snap is not loaded or not _ends_with_newline(file.path):
            file.write(snap)  # appends need one line per issue and a final newline
        file.path.parent.mkdir(parents=True, exist_ok=True)
        # ours to change in place: never IssueFile's cached snapshot
        self.snapshot = snap = _copy(snap)
        self.keys = snap.issues.dedupe_holders()
        self.stamp(file.path, generation)
        return snap

    def holder(self, key: str) -> str | None:
        return self.keys.get(key)

    def enter(self, author: str) -> None:
        """An inner block opens: its changes join this batch, made by ``author``."""
        self.depth += 1
        self._inner.append((author, len(self.changes)))

    def leave(self) -> list[str]:
        """A block closes; the subjects of the changes an inner block made (none for the
        outermost: the batch's commit carries them)."""
        self.depth -= 1
        if not self._inner:
            return []
        _, start = self._inner.pop()
        return self.changes[start:]

    def apply(self, file: IssueFile, generation: Path, issue: BeadsIssue, subject: str) -> None:
        """Record one change: in the snapshot, appended to the file, in the commit message."""
        snap = self.snapshot
        assert snap is not None
        text = issue_to_line(issue)
        try:  # the file first: a change that could not be written is not committed either
            st = append_whole(file.path, text.encode("utf-8") + b"\n", fsync=False)
        except OSError as e:
            raise StorageError(f"cannot write {file.path}: {e}") from e
        before = snap.issues.get(issue.id)
        if issue.id in snap.line_of:
            snap.lines[snap.line_of[issue.id]] = text
        else:
            snap.line_of[issue.id] = len(snap.lines)
            snap.lines.append(text)
        snap.issues[issue.id] = issue
        self._index(snap, before, issue)
        self.changes.append(subject)
        self.by.append(self._inner[-1][0] if self._inner else self.author)
        # No new generation token: an append always grows the file, which every other holder's
        # ``_unchanged`` sees in its (inode, size, mtime) check, and any holder that took the
        # lock since our last token made us reload (and stamp) in ``current``. Writing a token
        # on every change was a sixth of a batched change's cost.
        self._seen = (st.st_ino, st.st_size, st.st_mtime_ns)

    def message(self) -> str:
        """The batch commit's message: a counted subject, then every change on its own line."""
        verbs = Counter(_verb(c) for c in self.changes)
        said = ", ".join(f"{verb} {n}" for verb, n in verbs.most_common())
        plural = "s" if len(self.changes) != 1 else ""
        subject = f"{self.author}: {len(self.changes)} issue change{plural} ({said})"
        if set(self.by) <= {self.author}:
            return f"{subject}\n\n" + "\n".join(self.changes) + "\n"
        # Inner blocks (agents): each author's changes under its name, in the order they came.
        sections = []
        for who in dict.fromkeys(self.by):
            lines = [c for c, b in zip(self.changes, self.by, strict=True) if b == who]
            sections.append(f"{who}:\n" + "\n".join(lines))
        return f"{subject}\n\n" + "\n\n".join(sections) + "\n"

    def _index(self, snap: ParsedIssueFile, before: BeadsIssue | None, issue: BeadsIssue) -> None:
        key = _held_key(issue)
        if before is not None and _held_key(before) != key:
            # Re-keyed (``update(metadata=...)``, never done by the pipeline): the old key may
            # pass to a later issue and the new one stay with an earlier holder, so the index
            # is made again from the snapshot's rows, as outside a batch (no issue read for it).
            self.keys = snap.issues.dedupe_holders()
        elif key is not None:
            self.keys.setdefault(key, issue.id)

    def _unchanged(self, path: Path, generation: Path) -> bool:
        try:
            with open(generation, "rb") as fh:
                token = fh.read(16).decode("ascii")
            st = os.stat(path)
        except (OSError, UnicodeDecodeError):
            return False
        return token == self._token and (st.st_ino, st.st_size, st.st_mtime_ns) == self._seen

    def stamp(self, path: Path, generation: Path) -> None:
        """After a write of ours under the lock: tell the others, remember what we left."""
        self._token = stamp_generation(generation)
        self._seen = _key(path)


def _key(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def stamp_generation(generation: Path) -> str:
    """Write a fresh token: tells every open batch that the issue file changed (lock held).

    Always 16 characters written over the old ones in place: truncating a file and writing it
    again makes ext4 flush it (auto_da_alloc), milliseconds a change.
    """
    token = secrets.token_hex(8)
    try:
        fd = os.open(generation, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, token.encode("ascii"), 0)
        finally:
            os.close(fd)
    except OSError as e:
        raise StorageError(f"cannot write {generation}: {e}") from e
    return token


def _copy(snap: ParsedIssueFile) -> ParsedIssueFile:
    return ParsedIssueFile(
        snap.lines.copy(), snap.issues.copy(), dict(snap.line_of), list(snap.unreadable)
    )


def _ends_with_newline(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            if fh.seek(0, os.SEEK_END) == 0:
                return True
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"
    except FileNotFoundError:
        return True


def _held_key(issue: BeadsIssue) -> str | None:
    key = issue.metadata.get(DEDUPE_KEY)
    return str(key) if key is not None and issue.status != "tombstone" else None


def _verb(subject: str) -> str:
    words = subject.split(": ", 1)[-1].split()
    return words[0] if words else "changed"


__all__ = ["BatchState", "compacted", "stamp_generation"]
