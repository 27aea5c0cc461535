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

    def with_changes(self, changed: list[BeadsIssue]) -> list[str]:
        """The lines after replacing changed issues in place and appending new ones."""
        lines = list(self.lines)
        for issue in changed:
            text = issue_to_line(issue)
            if issue.id in self.line_of:
                lines[self.line_of[issue.id]] = text
            else:
                lines.append(text)
        return lines


class IssueFile:
    """One issues.jsonl; re-reads only when the file's identity or size/mtime changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._key: tuple[int, int, int] | None = None
        self._snapshot = Snapshot()

    def load(self) -> Snapshot:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._key, self._snapshot = None, Snapshot()
            return self._snapshot
        except OSError as e:
            raise StorageError(f"cannot read {self.path}: {e}") from e
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if key != self._key:
            self._snapshot = self._parse(self.path)
            self._key = key
        return self._snapshot

    @staticmethod
    def _parse(path: Path) -> Snapshot:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
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

    def write(self, lines: list[str]) -> None:
        """Replace the file atomically: a reader sees the old or the new file, never half."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = ("\n".join(lines) + "\n") if lines else ""
        try:
            mode = os.stat(self.path).st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".issues.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, self.path)
        except OSError as e:
            Path(tmp).unlink(missing_ok=True)
            raise StorageError(f"cannot write {self.path}: {e}") from e


__all__ = ["IssueFile", "Snapshot"]
