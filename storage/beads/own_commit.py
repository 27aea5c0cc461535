"""Committing our issue changes alone, never a person's uncommitted edit of the same file.

A person may edit ``.beads/issues.jsonl`` by hand and not commit it yet. Our commit is then
HEAD's version of the file with only our changed issues' lines replaced (and lines that are not
UTF-8 left out, as in the work tree): their edit stays uncommitted, where they left it. If a
commit of ours fails, the ids it carried are kept in ``.git/cortexgraph-beads.pending`` and the
next commit carries them too: a change of ours is never left behind as if it were a hand edit.
An open batch names there the changes of each inner block that ended (``record_pending``), so
a run that dies before its one commit leaves them to the next.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from cortexgraph.storage.beads.errors import CommitError
from cortexgraph.storage.beads.git_repo import GitFileCommitter
from cortexgraph.storage.beads.issue_file import IssueFile


def commit_own_changes(
    committer: GitFileCommitter, file: IssueFile, ids: Iterable[str], message: str
) -> str | None:
    """Commit the current lines of the issues ``ids`` (and of earlier failed commits); the
    caller holds the tracker's lock and has just written the file."""
    pending_path = committer.lock_path.with_suffix(".pending")
    pending = read_ids(pending_path) | set(ids)
    snap = file.load()  # what we just wrote: cached, not read again
    # in file order: new issues are appended to HEAD's version in the order the work tree has
    ours = [
        snap.issues[i] for i in sorted(pending & snap.issues.keys(), key=snap.line_of.__getitem__)
    ]
    try:
        sha = committer.commit_file(
            file.path, message, rebase=lambda base: file.rebased(base, ours), known=file.known()
        )
    except CommitError:
        write_ids(pending_path, pending)  # the change stays in the file; the next commit carries it
        raise
    pending_path.unlink(missing_ok=True)
    return sha


def record_pending(committer: GitFileCommitter, ids: Iterable[str]) -> None:
    """Name ``ids`` as changed but not committed yet (an open batch's finished block): the next
    commit carries them, this process's or, if it dies first, anyone's. Not synced, as git's
    objects are not: what must survive a power cut is the issue file's lines (synced by the
    caller); a lost name leaves them in the work tree, uncommitted, never lost."""
    path = committer.lock_path.with_suffix(".pending")
    write_ids(path, read_ids(path) | set(ids))


def sync_file(path: Path) -> None:
    """fsync ``path`` (its appended lines); a file that cannot be opened is left as it is."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def commit_ids(subjects: Iterable[str]) -> set[str]:
    """The issue ids a batch's commit message lines name (each starts ``<id>: ...``)."""
    return {s.split(":", 1)[0] for s in subjects if ":" in s}


def read_ids(path: Path) -> set[str]:
    try:
        ids = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {x for x in ids if isinstance(x, str)} if isinstance(ids, list) else set()


def write_ids(path: Path, ids: set[str]) -> None:
    with contextlib.suppress(OSError):  # .git/ not writable: what failed the commit, likely
        path.write_text(json.dumps(sorted(ids)), encoding="utf-8")


__all__ = ["commit_ids", "commit_own_changes", "read_ids", "write_ids"]
