"""Reading and atomically rewriting ``.beads/issues.jsonl`` without disturbing foreign lines.

Every line is kept as its original text; only the lines of issues we change are re-serialised.
Lines of another ``_type``, or lines we cannot parse, are written back byte for byte (with a
warning for the unreadable ones), so bd's own records and hand edits survive our rewrites.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from storage.beads.errors import IssueRecordError
from storage.beads.schema import BeadsIssue, issue_from_line, issue_to_line
from storage.errors import StorageError

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Snapshot:
    """The file as read: raw lines, and where each issue id's (last) line is."""

    lines: list[str] = field(default_factory=list)
    issues: dict[str, BeadsIssue] = field(default_factory=dict)
    line_of: dict[str, int] = field(default_factory=dict)
    unreadable: list[tuple[int, str]] = field(default_factory=list)  # (line number, why)

    def with_changes(self, changed: list[BeadsIssue]) -> Snapshot:
        """A new snapshot: changed issues replaced in place, new ones appended."""
        new = Snapshot(list(self.lines), dict(self.issues), dict(self.line_of), self.unreadable)
        for issue in changed:
            text = issue_to_line(issue)
            if issue.id in new.line_of:
                new.lines[new.line_of[issue.id]] = text
            else:
                new.line_of[issue.id] = len(new.lines)
                new.lines.append(text)
            new.issues[issue.id] = issue
        return new


class IssueFile:
    """One issues.jsonl; parses again only when its bytes differ from what was last seen.

    Comparing bytes, not stat data: an atomic replace can reuse a freed inode with the same
    size within one mtime tick, and a stale snapshot under the lock would lose an update.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._data: bytes | None = None
        self._snapshot = Snapshot()

    def load(self) -> Snapshot:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            self._data, self._snapshot = None, Snapshot()
            return self._snapshot
        except OSError as e:
            raise StorageError(f"cannot read {self.path}: {e}") from e
        if data != self._data:
            self._snapshot = self._parse(self.path, data)
            self._data = data
        return self._snapshot

    @staticmethod
    def _parse(path: Path, data: bytes) -> Snapshot:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise StorageError(f"cannot read {path}: {e}") from e
        snap = Snapshot(lines=[line for line in text.splitlines() if line.strip()])
        for i, line in enumerate(snap.lines):
            try:
                issue = issue_from_line(line)
            except IssueRecordError as e:
                snap.unreadable.append((i + 1, str(e)))
                log.warning("%s line %d kept as is, not read as an issue: %s", path, i + 1, e)
                continue
            if issue is not None:
                snap.issues[issue.id] = issue
                snap.line_of[issue.id] = i
        return snap

    def write(self, snapshot: Snapshot) -> None:
        """Replace the file atomically: a reader sees the old or the new file, never half."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lines = snapshot.lines
        text = ("\n".join(lines) + "\n") if lines else ""
        try:
            mode = os.stat(self.path).st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".issues.", suffix=".tmp")
        try:
            data = text.encode("utf-8")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, self.path)
        except OSError as e:
            Path(tmp).unlink(missing_ok=True)
            raise StorageError(f"cannot write {self.path}: {e}") from e
        # what we just wrote is what the next load would parse: skip that work
        self._data, self._snapshot = data, snapshot


__all__ = ["IssueFile", "Snapshot"]
