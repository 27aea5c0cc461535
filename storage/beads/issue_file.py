"""Reading and atomically rewriting ``.beads/issues.jsonl`` without disturbing foreign lines.

Every line is kept as its original text; only the lines of issues we change are re-serialised.
Lines of another ``_type``, or lines we cannot parse, are written back byte for byte (with a
warning for the unreadable ones), so bd's own records and hand edits survive our rewrites.

Lines are split on ``\\n`` only: U+2028 and its kin inside a string are text, not line breaks
(and we write them escaped). Two kinds of damage are handled on reading:

* an issue that an older version split apart (it read with ``str.splitlines()`` and wrote the
  pieces back on separate lines) is glued together again, with U+2028 where the break was;
* a line that is not UTF-8 is skipped (held with its bytes as ``surrogateescape`` text), and
  at the next change moved with its original bytes to ``issues.quarantine.jsonl`` beside the
  file, as the memory store quarantines its bad lines.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from cortexgraph.storage.beads.issue_lines import IssueLines
from cortexgraph.storage.beads.issue_map import IssueMap
from cortexgraph.storage.beads.parse_cache import bytes_key, load_parsed, save_parsed
from cortexgraph.storage.beads.schema import (
    BeadsIssue,
    escape_unsafe_chars,
    issue_from_line,
    issue_to_line,
)
from cortexgraph.storage.errors import StorageError
from cortexgraph.storage.jsonl_lines import BadLine, quarantine_path
from cortexgraph.storage.quarantine import append_quarantine, quarantine_entry

log = logging.getLogger(__name__)

REJOIN_SEPARATOR = "\u2028"  # stands in for whichever line-breaking character was lost
MAX_PIECES = 16  # pieces of one split record looked for (one per break in its text)
NOT_UTF8 = "not UTF-8"


@dataclass(frozen=True, slots=True)
class QuarantinedLine:
    number: int  # in the file as it was read
    reason: str
    raw: bytes  # the line's original bytes


@dataclass(slots=True)
class ParsedIssueFile:
    """The file as read: its lines, and where each issue id's (last) line is.

    A line that is not UTF-8 is held as ``surrogateescape`` text, so writing it back gives its
    bytes; ``unreadable`` numbers a line by its place in ``lines`` (1-based).
    """

    lines: IssueLines = field(default_factory=IssueLines)  # a list given is held as one
    issues: IssueMap = field(default_factory=IssueMap)  # a dict given is held as one
    line_of: dict[str, int] = field(default_factory=dict)
    unreadable: list[tuple[int, str]] = field(default_factory=list)  # (line number, why)
    quarantined: list[QuarantinedLine] = field(default_factory=list)  # left out of ``lines``

    def __post_init__(self) -> None:
        if not isinstance(self.lines, IssueLines):
            self.lines = IssueLines(self.lines)
        if not isinstance(self.issues, IssueMap):
            self.issues = IssueMap(self.issues)

    def with_changes(self, changed: Sequence[BeadsIssue]) -> ParsedIssueFile:
        """A new snapshot: changed issues replaced in place, new ones appended, and the lines
        that are not UTF-8 taken out into ``quarantined`` (IssueFile.write moves them aside)."""
        lines, line_of, issues = self.lines.copy(), dict(self.line_of), self.issues.copy()
        for issue in changed:
            text = issue_to_line(issue)
            if issue.id in line_of:
                lines[line_of[issue.id]] = text
            else:
                line_of[issue.id] = len(lines)
                lines.append(text)
            issues[issue.id] = issue
        why = dict(self.unreadable)
        out = [i for i in (n - 1 for n in why) if 0 <= i < len(lines) and not _is_utf8(lines[i])]
        if not out:
            return ParsedIssueFile(lines, issues, line_of, list(self.unreadable), [])
        gone = set(out)
        kept = [i for i in range(len(lines)) if i not in gone]
        moved = {old: new for new, old in enumerate(kept)}
        return ParsedIssueFile(
            IssueLines([lines[i] for i in kept]),
            issues,
            {issue_id: moved[i] for issue_id, i in line_of.items() if i in moved},
            [(moved[n - 1] + 1, r) for n, r in self.unreadable if n - 1 in moved],
            [QuarantinedLine(i + 1, why[i + 1], _encode(lines[i])) for i in out],
        )

    def to_bytes(self) -> bytes:
        return self.lines.to_bytes()


def parse_issue_lines(data: bytes, source: str = "issues.jsonl") -> ParsedIssueFile:
    """A snapshot of a file's bytes; never raises for what a line holds."""
    physical = data.split(b"\n")
    snap = ParsedIssueFile()
    i = 0
    while i < len(physical):
        raw = physical[i]
        i += 1
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            why = f"{NOT_UTF8} ({e.reason} at byte {e.start}); moved aside at the next change"
            _add_unreadable(snap, raw.decode("utf-8", "surrogateescape"), why, source)
            continue
        try:
            issue = issue_from_line(text)
        except Exception as e:  # whatever breaks on one line is that line's
            rejoined = _rejoin(text, physical, i)
            if rejoined is None:
                _add_unreadable(snap, text, _short(e), source)
                continue
            text, issue, used = rejoined
            log.warning(
                "%s: lines %d-%d are one record split by a line separator; read as one",
                source,
                len(snap.lines) + 1,
                len(snap.lines) + used,
            )
            i += used - 1
        if issue is not None:
            snap.issues[issue.id] = issue
            snap.line_of[issue.id] = len(snap.lines)
        snap.lines.append(text)
    return snap


def apply_changes(data: bytes, changed: Sequence[BeadsIssue]) -> bytes:
    """``data`` (another version of the file: the committed or the staged one) with only our
    changes made to it: the changed issues' lines, and lines that are not UTF-8 left out."""
    return parse_issue_lines(data).with_changes(changed).to_bytes()


def _add_unreadable(snap: ParsedIssueFile, text: str, why: str, source: str) -> None:
    snap.lines.append(text)
    snap.unreadable.append((len(snap.lines), why))
    log.warning("%s line %d skipped: %s", source, len(snap.lines), why)


def _rejoin(
    first: str, physical: list[bytes], nxt: int
) -> tuple[str, BeadsIssue | None, int] | None:
    """The record that starts with ``first`` if it goes on over the next lines: the pieces an
    older version made of a text holding U+2028 (or kin). Each piece is unreadable alone; a
    blank line, a line that is not UTF-8 or one that is a record by itself ends the search."""
    texts = [first]
    for j in range(nxt, min(len(physical), nxt + MAX_PIECES - 1)):
        try:
            piece = physical[j].decode("utf-8")
        except UnicodeDecodeError:
            return None
        if not piece.strip() or _is_record(piece):
            return None
        texts.append(piece)
        joined = REJOIN_SEPARATOR.join(texts)
        try:
            issue = issue_from_line(joined)
        except Exception:  # not whole yet: try one more piece
            continue
        return escape_unsafe_chars(joined), issue, len(texts)
    return None


def _is_record(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except Exception:  # whatever cannot be parsed is not a record
        return False


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _short(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[:limit] + "..."


class IssueFile:
    """One issues.jsonl; parses again only when its bytes differ from what was last seen.

    Comparing bytes, not stat data: an atomic replace can reuse a freed inode with the same
    size within one mtime tick, and a stale snapshot under the lock would lose an update.
    """

    def __init__(self, path: Path, parse_cache: Path | None = None) -> None:
        self.path = path
        # Where the parse of the file's current bytes is kept for the next process
        # (parse_cache.py); None: every process parses.
        self.parse_cache = parse_cache
        self.quarantine_path = quarantine_path(path)
        self._data: bytes | None = None
        self._snapshot = ParsedIssueFile()
        # The versions of the file this one last read, wrote and committed, parsed: the next
        # commit's base (HEAD) is one of them unless someone else committed the file since,
        # and then its bytes differ and are parsed.
        # (bytes, parse, whether the bytes are the parse's ``to_bytes()``: what this file wrote,
        # their ``bytes_key`` if hashed: kept here, it goes with the bytes)
        self._known: list[tuple[bytes, ParsedIssueFile, bool, bytes | None]] = []

    def rebased(self, base: bytes, changed: Sequence[BeadsIssue]) -> bytes:
        """``apply_changes(base, changed)``, parsing ``base`` only when it is not bytes this
        file last read, wrote or committed. A run commits one batch per agent, each on top of
        the last: HEAD's file (2.5 MB at 10k memories) was parsed again for every commit.
        The result is usually the very file the batch just wrote (HEAD plus our changes, no
        hand edit): then those bytes are returned, not joined again (15 MB at 100k)."""
        snap = next((parsed for data, parsed, _, _ in self._known if data == base), None)
        if snap is None:
            snap = parse_issue_lines(base, str(self.path))
        out = snap.with_changes(changed)
        if out.quarantined:  # taken-out lines are not in the bytes: not their parse
            return out.to_bytes()
        written = (d for d, parsed, own, _ in self._known if own and parsed.lines == out.lines)
        data = next(written, None) or out.to_bytes()
        self._remember(data, out, canonical=True)
        return data

    def known(self) -> list[tuple[bytes, bytes | None]]:
        """The versions of the file this one last read, wrote or committed, newest first,
        each with its blob sha (``bytes_key``) if it was hashed."""
        return [(data, key) for data, _, _, key in self._known]

    def _remember(
        self, data: bytes, snapshot: ParsedIssueFile, *, canonical: bool, key: bytes | None = None
    ) -> None:
        kept = []
        for version in self._known:
            if version[0] != data:
                kept.append(version)
            elif key is None:  # the same bytes again (a commit of what was written)
                key = version[3]
        self._known = [(data, snapshot, canonical, key), *kept][:3]

    def load(self) -> ParsedIssueFile:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            self._data, self._snapshot = None, ParsedIssueFile()
            return self._snapshot
        except OSError as e:
            raise StorageError(f"cannot read {self.path}: {e.strerror or e}") from e
        if data != self._data:
            key = None if self.parse_cache is None else bytes_key(data)
            self._snapshot = self._parse(data, key)
            self._data = data
            self._remember(data, self._snapshot, canonical=False, key=key)
        return self._snapshot

    def _parse(self, data: bytes, key: bytes | None) -> ParsedIssueFile:
        if self.parse_cache is None or key is None:  # key: None without a parse cache
            return parse_issue_lines(data, str(self.path))
        known = load_parsed(self.parse_cache, data, key)
        if known is not None:
            return known
        snap = parse_issue_lines(data, str(self.path))
        save_parsed(self.parse_cache, data, key, snap)
        return snap

    def write(self, snapshot: ParsedIssueFile) -> None:
        """Replace the file atomically: a reader sees the old or the new file, never half.
        Lines ``with_changes`` took out go to the quarantine file first."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if snapshot.quarantined:
            self._quarantine(snapshot.quarantined)
            snapshot = replace(snapshot, quarantined=[])
        data = snapshot.to_bytes()
        try:
            mode = os.stat(self.path).st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
        except OSError as e:
            raise StorageError(f"cannot write {self.path}: {e.strerror or e}") from e
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".issues.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, self.path)
        except OSError as e:
            Path(tmp).unlink(missing_ok=True)
            raise StorageError(f"cannot write {self.path}: {e.strerror or e}") from e
        # what we just wrote is what the next load would parse: skip that work, here and in
        # the next process
        self._data, self._snapshot = data, snapshot
        key = None if self.parse_cache is None else bytes_key(data)
        self._remember(data, snapshot, canonical=True, key=key)
        if self.parse_cache is not None and key is not None:
            save_parsed(self.parse_cache, data, key, snapshot)

    def _quarantine(self, lines: list[QuarantinedLine]) -> None:
        """Append each line's original bytes and why (the memory store's quarantine entry),
        fsynced before the issue file loses them."""
        now = int(time.time())
        entries = [
            {
                **quarantine_entry(BadLine(q.raw, q.reason), self.path.name, now),
                "line_number": q.number,
            }
            for q in lines
        ]
        append_quarantine(self.quarantine_path, entries)  # whole or not at all, fsynced
        _exclude_from_git(self.quarantine_path)
        log.warning(
            "moved %d line(s) that are not UTF-8 from %s to %s",
            len(lines),
            self.path,
            self.quarantine_path,
        )


def _exclude_from_git(path: Path) -> None:
    """List ``path`` in its repository's ``.git/info/exclude`` (local, never committed), so
    the quarantine file is not left untracked in the person's ``git status``. Best effort."""
    for folder in path.resolve().parents:
        dot_git = folder / ".git"
        if not dot_git.exists():
            continue
        try:
            if dot_git.is_file():  # a worktree: "gitdir: <path>"
                text = dot_git.read_text(encoding="utf-8").strip()
                dot_git = (folder / text.removeprefix("gitdir:").strip()).resolve()
            exclude = dot_git / "info" / "exclude"
            line = "/" + path.resolve().relative_to(folder).as_posix()
            have = exclude.read_text(encoding="utf-8").splitlines() if exclude.exists() else []
            if line not in have:
                exclude.parent.mkdir(parents=True, exist_ok=True)
                with exclude.open("a", encoding="utf-8") as fh:
                    fh.write(("\n" if have and have[-1] != "" else "") + line + "\n")
        except (OSError, ValueError):
            pass
        return


__all__ = ["IssueFile", "ParsedIssueFile", "QuarantinedLine", "apply_changes", "parse_issue_lines"]
