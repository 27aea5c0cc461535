"""BeadsTracker: issues in ``.beads/issues.jsonl``, one git commit per change or per batch.

Every change runs under one inter-process lock (kept in ``.git/`` so it never shows up as an
untracked file): re-read the file, decide, rewrite atomically, commit. That makes ``claim``
atomic across processes and keeps each commit's message about exactly one change. Inside
``with tracker.batch("agent"):`` changes keep the lock and the re-read but are appended to the
file and committed once when the block ends, one line per change in the message (batch.py).
Structurally satisfies ``agents.protocols.IssueTracker`` (storage may not import agents).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from cortexgraph.storage.beads.batch import BatchState, compacted, stamp_generation
from cortexgraph.storage.beads.commit_log import IssueCommit, change_message, own_commits
from cortexgraph.storage.beads.errors import IssueNotFoundError
from cortexgraph.storage.beads.fields import (
    UPDATABLE,
    check_priority,
    check_title,
    clean_labels,
    validated,
)
from cortexgraph.storage.beads.git_repo import (
    GitFileCommitter,
    GitIdentity,
    RepoPlace,
)
from cortexgraph.storage.beads.ids import check_prefix, new_issue_id
from cortexgraph.storage.beads.issue_file import IssueFile, ParsedIssueFile
from cortexgraph.storage.beads.lock import IssueLock
from cortexgraph.storage.beads.own_commit import (
    commit_ids,
    commit_own_changes,
    record_pending,
    sync_file,
)
from cortexgraph.storage.beads.pack import PACK_THRESHOLD, PackReport, refresh
from cortexgraph.storage.beads.schema import (
    DEDUPE_KEY,
    ISSUE_TYPES,
    BeadsIssue,
    time_from_timestamp,
)
from cortexgraph.storage.errors import InvalidInputError

if TYPE_CHECKING:
    from git import Repo

T = TypeVar("T")
BEADS_DIR = ".beads"
ISSUES_FILE = "issues.jsonl"


@dataclass(frozen=True, slots=True)
class _Change:
    issue: BeadsIssue
    message: str


class BeadsTracker:
    """The real IssueTracker. Create with :func:`open_tracker`."""

    backend = "beads"

    def __init__(
        self,
        repo: Repo | RepoPlace,
        beads_dir: Path,
        *,
        prefix: str = "cg",
        identity: GitIdentity | None = None,
        clock: Callable[[], float] = time.time,
        lock_timeout: float = 60.0,
        pack_threshold: int | None = PACK_THRESHOLD,
    ) -> None:
        self.prefix = check_prefix(prefix)
        self.beads_dir = beads_dir
        self.path = beads_dir / ISSUES_FILE
        self.identity = identity or GitIdentity()
        self._committer = GitFileCommitter(repo, self.identity, pack_threshold=pack_threshold)
        # the parse of the file's bytes is kept beside the lock for the next process
        self._file = IssueFile(self.path, self._committer.lock_path.with_suffix(".parsed"))
        self._clock = clock
        self._flock = IssueLock(self._committer.lock_path, lock_timeout)
        self._generation = self._committer.lock_path.with_suffix(".gen")
        self._tlock = threading.RLock()
        self._batch: BatchState | None = None

    @property
    def repo(self) -> Repo:
        """The git repository (opened on first use: reading issues needs no git), seeing the
        packs another process made since (one ``stat`` when there are none: pack.refresh)."""
        repo = self._committer.repo
        refresh(repo)
        return repo

    def __repr__(self) -> str:
        return f"BeadsTracker({str(self.path)!r}, prefix={self.prefix!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Prefect/Dask may ship the tracker to another process: reopen it there by path.
        root, threshold = self._committer.root, self._committer.pack_threshold
        args = (str(root), str(self.beads_dir), self.prefix, self.identity, self._clock, threshold)
        from cortexgraph.storage.beads.opening import reopen_tracker  # (it imports this one)

        return (reopen_tracker, args)

    # -- reading ------------------------------------------------------------------------
    def query(
        self,
        *,
        labels: Sequence[str] = (),
        status: str | None = None,
        assignee: str | None = None,
        include_tombstones: bool = False,
    ) -> list[BeadsIssue]:
        """Issues carrying all ``labels`` (and the status/assignee if given), file order."""
        wanted = set(labels)

        def status_ok(have: str) -> bool:
            return (status is None or have == status) and (
                include_tombstones or status == "tombstone" or have != "tombstone"
            )

        with self._tlock:  # only the issues that pass are read (issue_map.IssueMap)
            issues = self._read().issues.matching(wanted, status_ok, status)
        return [i for i in issues if assignee is None or i.assignee == assignee]

    def find(self, issue_id: str) -> BeadsIssue | None:
        """By full id, or by the hash alone (``1a2b`` for ``cg-1a2b``)."""
        with self._tlock:
            issues = self._read().issues
        return issues.get(issue_id) or issues.get(f"{self.prefix}-{issue_id}")

    def get(self, issue_id: str) -> BeadsIssue:
        issue = self.find(issue_id)
        if issue is None:
            raise IssueNotFoundError(f"no issue {issue_id!r} in {self.path}")
        return issue

    def unreadable_lines(self) -> list[tuple[int, str]]:
        with self._tlock:
            return list(self._read().unreadable)

    def history(self, issue_id: str | None = None, *, limit: int = 50) -> list[IssueCommit]:
        """Our commits (newest first) along HEAD's first-parent line, optionally for one issue."""
        return own_commits(self.repo, self.identity.email, issue_id, limit=limit)

    def pack(self) -> PackReport:
        """Pack the repository's loose objects now (what commits do past ``pack_threshold``):
        ``.git``'s size before and after. PackError if git fails."""
        return self._locked(self._committer.pack)

    # -- changing -----------------------------------------------------------------------
    def create(
        self,
        title: str,
        *,
        description: str = "",
        labels: Sequence[str] = (),
        priority: int = 2,
        metadata: Mapping[str, Any] | None = None,
        dedupe_key: str | None = None,
        issue_type: str = "task",
        assignee: str | None = None,
    ) -> BeadsIssue:
        """Open an issue; with ``dedupe_key``, return the issue already holding that key."""
        title = check_title(title)
        check_priority(priority)
        if issue_type not in ISSUE_TYPES:
            raise InvalidInputError(f"issue_type must be one of {ISSUE_TYPES}, got {issue_type!r}")
        meta = dict(metadata or {})
        if dedupe_key is not None:
            meta[DEDUPE_KEY] = dedupe_key
        tidy = clean_labels(labels)

        def change(snap: ParsedIssueFile, now: datetime) -> tuple[BeadsIssue, _Change | None]:
            if dedupe_key is not None:
                held = self._holder(snap, dedupe_key)
                if held is not None:
                    return held, None
            seed = f"{title}\x00{description}\x00{self.identity.name}\x00{now.isoformat()}"
            issue_id = new_issue_id(self.prefix, seed, snap.issues, len(snap.issues))
            issue = BeadsIssue(
                id=issue_id,
                title=title,
                description=description,
                status="open",
                priority=priority,
                issue_type=issue_type,
                assignee=assignee or None,
                created_at=now,
                created_by=self.identity.name,
                updated_at=now,
                labels=tidy,
                metadata=meta,
            )
            details = [f"labels: {', '.join(tidy)}"] if tidy else []
            details.append(f"priority: {priority}")
            return issue, _Change(issue, change_message(f"{issue_id}: opened", title, details))

        return self._transact(change)

    def claim(self, issue_id: str, assignee: str) -> BeadsIssue | None:
        """Take an open issue (status -> in_progress); None if it is not open or not free."""
        if not assignee:
            raise InvalidInputError("claim needs a non-empty assignee")

        def change(
            snap: ParsedIssueFile, now: datetime
        ) -> tuple[BeadsIssue | None, _Change | None]:
            issue = self._in(snap, issue_id)
            if issue.status != "open" or issue.assignee not in (None, assignee):
                return None, None
            claimed = replace(issue, status="in_progress", assignee=assignee, updated_at=now)
            return claimed, _Change(claimed, f"{issue.id}: claimed by {assignee}")

        return self._transact(change)

    def update(self, issue_id: str, **changes: Any) -> BeadsIssue:
        """Replace fields (``metadata`` is merged); a closed status sets ``closed_at``."""
        unknown = set(changes) - UPDATABLE
        if unknown:
            raise InvalidInputError(
                f"cannot update {sorted(unknown)}; allowed: {sorted(UPDATABLE)}"
            )
        fields = validated(changes)

        def change(snap: ParsedIssueFile, now: datetime) -> tuple[BeadsIssue, _Change | None]:
            issue = self._in(snap, issue_id)
            new = dict(fields)
            if "metadata" in new:
                new["metadata"] = {**issue.metadata, **new["metadata"]}
            if "status" in new and new["status"] != issue.status:
                closing = new["status"] == "closed"
                new["closed_at"] = now if closing else None
                new["close_reason"] = issue.close_reason if closing else ""
            updated = replace(issue, **new)
            if updated == issue:
                return issue, None
            updated = replace(updated, updated_at=now)
            said = [
                f"status {issue.status} -> {updated.status}" if k == "status" else k
                for k in sorted(new)
                if k not in ("closed_at", "close_reason") and getattr(issue, k) != new[k]
            ]
            return updated, _Change(updated, f"{issue.id}: updated {', '.join(said)}")

        return self._transact(change)

    def close(self, issue_id: str, reason: str) -> BeadsIssue:
        """Close with a reason; closing a closed issue returns it unchanged."""
        reason = (reason or "").strip()

        def change(snap: ParsedIssueFile, now: datetime) -> tuple[BeadsIssue, _Change | None]:
            issue = self._in(snap, issue_id)
            if issue.status == "closed":
                return issue, None
            closed = replace(
                issue, status="closed", closed_at=now, close_reason=reason, updated_at=now
            )
            head, _, rest = reason.partition("\n")
            subject = f"{issue.id}: closed ({head[:60]})" if head else f"{issue.id}: closed"
            return closed, _Change(closed, change_message(subject, rest.strip(), []))

        return self._transact(change)

    @contextmanager
    def batch(self, author: str) -> Iterator[BatchState]:
        """Changes made through this tracker inside the block become one commit at its end.

        Each change still holds the lock and sees other writers' changes (claims stay atomic);
        the commit is made even when the block raises, so no change is left uncommitted.
        Nested blocks join the outer one, their changes listed under their own ``author``; when
        one ends, its changes are synced and recorded as pending (own_commit), so a process
        that dies before the outer commit leaves them to the next commit of anyone's.
        Reads inside see the batch's changes. Yields the batch's state: whether anyone else
        wrote the file while it was open, and what it left.
        """
        with self._tlock:
            if self._batch is not None:
                self._batch.enter(author)
            else:
                self._batch = BatchState.opened(author, self.path)
            state = self._batch
        try:
            yield state
        finally:
            with self._tlock:
                state = self._batch
                assert state is not None
                made = state.leave()
                if state.depth == 0:
                    self._batch = None
                    if state.changes:
                        self._locked(lambda: self._commit_batch(state))
                elif made:
                    self._locked(lambda: self._checkpoint(made))

    # -- machinery ----------------------------------------------------------------------
    def _read(self) -> ParsedIssueFile:
        """The file as it is now (the batch's snapshot while nobody else has written)."""
        if self._batch is not None and self._batch.snapshot is not None:
            return self._locked(lambda: self._batch_snapshot())
        return self._file.load()

    def _batch_snapshot(self) -> ParsedIssueFile:
        assert self._batch is not None
        return self._batch.current(self._file, self._generation)

    def _holder(self, snap: ParsedIssueFile, key: str) -> BeadsIssue | None:
        """The non-tombstoned issue holding a dedupe key (indexed inside a batch)."""
        if self._batch is not None and self._batch.snapshot is snap:
            found = self._batch.holder(key)
            return snap.issues[found] if found is not None else None
        for issue_id, status, _, held_key in snap.issues.summaries():
            if status != "tombstone" and held_key == key:
                return snap.issues[issue_id]
        return None

    def _commit_batch(self, state: BatchState) -> None:
        snap = state.current(self._file, self._generation)
        self._file.write(snap)  # the canonical file: one line per issue, fsynced
        state.stamp(self._file.path, self._generation)
        commit_own_changes(self._committer, self._file, commit_ids(state.changes), state.message())

    def _checkpoint(self, subjects: list[str]) -> None:
        """An inner block's changes, appended unsynced, made durable and named as pending:
        what a per-block commit guaranteed, without rewriting and committing the file."""
        sync_file(self.path)
        record_pending(self._committer, commit_ids(subjects))

    def _locked(self, work: Callable[[], T]) -> T:
        with self._tlock:
            self._flock.acquire()  # LockTimeoutError (a StorageError) after lock_timeout
            try:
                return work()
            finally:
                self._flock.release()

    def _in(self, snap: ParsedIssueFile, issue_id: str) -> BeadsIssue:
        issue = snap.issues.get(issue_id) or snap.issues.get(f"{self.prefix}-{issue_id}")
        if issue is None:
            raise IssueNotFoundError(f"no issue {issue_id!r} in {self.path}")
        return issue

    def _transact(
        self, change: Callable[[ParsedIssueFile, datetime], tuple[T, _Change | None]]
    ) -> T:
        def work() -> T:
            state = self._batch
            if state is not None:
                snap = state.current(self._file, self._generation)
                result, done = change(snap, time_from_timestamp(self._clock()))
                if done is not None:
                    subject = done.message.partition("\n")[0]
                    state.apply(self._file, self._generation, done.issue, subject)
                return result
            snap = compacted(self._file.load())  # folds the copies an open batch appended
            result, done = change(snap, time_from_timestamp(self._clock()))
            if done is not None:
                self._file.write(snap.with_changes([done.issue]))
                stamp_generation(self._generation)
                # only our lines: a person's uncommitted edit of the file stays theirs
                commit_own_changes(self._committer, self._file, [done.issue.id], done.message)
            return result

        return self._locked(work)


__all__ = ["BEADS_DIR", "ISSUES_FILE", "BeadsTracker"]
