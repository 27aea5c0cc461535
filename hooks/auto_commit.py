"""``auto_commit: true``: at session end, commit the store's files to its git repository.

The store directory is a git repository of its own (the one beads issues are committed to;
created if missing). Only the memories and relations files are committed, each with the
beads committer (storage.beads.git_repo): a commit is built from HEAD's tree with that one file
replaced, so nothing else in the repository is swept in. The message says what changed since
the last commit: memories added, changed and deleted, with a short preview of each.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortexgraph.hooks.quick_search import RawStoreRecords
from cortexgraph.storage.config import StoreConfig

LISTED = 20  # memories named one by one in a message; the rest are counted
PREVIEW = 70


@dataclass(frozen=True, slots=True)
class RecordChanges:
    added: list[dict[str, Any]]
    changed: list[dict[str, Any]]
    deleted: list[dict[str, Any]]

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.deleted)


def live_records(data: bytes) -> dict[str, dict[str, Any]]:
    records: dict[str, dict[str, Any]] = {}
    RawStoreRecords._parse(data, records, {})
    return records


def diff_records(before: bytes, after: bytes) -> RecordChanges:
    old, new = live_records(before), live_records(after)
    return RecordChanges(
        [new[i] for i in new if i not in old],
        [new[i] for i in new if i in old and new[i] != old[i]],
        [old[i] for i in old if i not in new],
    )


def _line(mark: str, record: dict[str, Any]) -> str:
    text = " ".join(str(record.get("content") or record.get("relation_type") or "").split())
    text = text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"
    return f"{mark} {record.get('id')}: {text}" if text else f"{mark} {record.get('id')}"


def commit_message(kind: str, changes: RecordChanges, session: str) -> str:
    head = (
        f"cortexgraph: {len(changes.added)} {kind} added, {len(changes.changed)} changed, "
        f"{len(changes.deleted)} deleted"
    )
    lines = [
        *(_line("+", r) for r in changes.added),
        *(_line("~", r) for r in changes.changed),
        *(_line("-", r) for r in changes.deleted),
    ]
    body = lines[:LISTED] + ([f"... and {len(lines) - LISTED} more"] if len(lines) > LISTED else [])
    footer = [f"Claude Code session {session}"] if session else []
    return "\n".join([head, "", *body, *(["", *footer] if footer else [])])


def head_bytes(repo: Any, rel: Path) -> bytes:
    try:
        tree = repo.head.commit.tree
    except ValueError:  # no commit yet
        return b""
    try:
        return tree[rel.as_posix()].data_stream.read()
    except KeyError:
        return b""


def commit_store(storage_path: Path, config: StoreConfig, session: str = "") -> list[str]:
    """Commit what changed in the memories and relations files; the commit messages' first
    lines (empty when nothing changed). Raises storage.beads errors when git is unusable."""
    from cortexgraph.storage.beads.git_repo import GitFileCommitter, open_repo
    from cortexgraph.storage.beads.lock import IssueLock

    if not (storage_path / config.memories_filename).exists():
        return []
    repo = open_repo(storage_path, search_parents=False, init=True)
    committer = GitFileCommitter(repo)
    lock = IssueLock(committer.lock_path, 30.0)  # the beads tracker's lock: one writer of HEAD
    done: list[str] = []
    lock.acquire()
    try:
        for kind, name in (
            ("memories", config.memories_filename),
            ("relations", config.relations_filename),
        ):
            path = storage_path / name
            if not path.exists():
                continue
            changes = diff_records(head_bytes(repo, Path(name)), path.read_bytes())
            if not changes:
                continue
            message = commit_message(kind, changes, session)
            if committer.commit_file(path, message) is not None:
                done.append(message.splitlines()[0])
    finally:
        lock.release()
    return done


__all__ = ["RecordChanges", "commit_message", "commit_store", "diff_records"]
