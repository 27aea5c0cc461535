"""The tracker's git history: its commit messages and the walk that reads them back."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from cortexgraph.storage.beads.pack import refresh

if TYPE_CHECKING:
    from git import Repo

# Walks of the history begun again when an object went missing under one (pack.py).
_WALKS = 3


@dataclass(frozen=True, slots=True)
class IssueCommit:
    """One commit of the tracker's history."""

    sha: str
    when: datetime
    message: str


def own_commits(
    repo: Repo, author_email: str, issue_id: str | None = None, *, limit: int = 50
) -> list[IssueCommit]:
    """Commits by ``author_email`` (newest first) along HEAD's first-parent line.

    Readers take no lock, so another process may pack while one walks: git writes the pack,
    then deletes the loose objects in it, and gitdb looks for an object where it last saw it
    and in the packs it listed (BadObject, or FileNotFoundError for a loose file it had
    found). The walk then lists the packs again and starts over."""
    from gitdb.exc import BadObject

    for walk in range(1, _WALKS):
        try:
            return _walk(repo, author_email, issue_id, limit)
        except (BadObject, FileNotFoundError):
            time.sleep(0.01 * walk)  # a pack whose index git has yet to move into place
            refresh(repo, force=True)
    return _walk(repo, author_email, issue_id, limit)


def _walk(repo: Repo, author_email: str, issue_id: str | None, limit: int) -> list[IssueCommit]:
    out: list[IssueCommit] = []
    try:
        commit = repo.head.commit
    except ValueError:
        return out
    for _ in range(5000):  # bounded walk: a user's long history is not ours to scan
        if commit.author.email == author_email:
            message = str(commit.message)
            if issue_id is None or mentions(message, issue_id):
                out.append(IssueCommit(commit.hexsha, commit.authored_datetime, message))
                if len(out) >= limit:
                    break
        if not commit.parents:
            break
        commit = commit.parents[0]
    return out


def mentions(message: str, issue_id: str) -> bool:
    """A commit about this issue: its own, or a batch listing it on a line of its own."""
    return message.startswith(f"{issue_id}:") or f"\n{issue_id}:" in message


def change_message(subject: str, title: str, details: list[str]) -> str:
    """A commit message: the subject (an opened issue's title quoted in it), then the details."""
    if title and subject.endswith("opened"):
        subject = f'{subject} "{title[:60]}"'
        title = ""
    body = "\n".join(x for x in [title, *details] if x)
    return f"{subject}\n\n{body}\n" if body else f"{subject}\n"
