"""auto_commit: the SessionEnd hook commits the store's changes to its git repository."""

from __future__ import annotations

import time
from pathlib import Path

import git
from hooks_helpers import assert_silent


def end() -> dict[str, str]:
    return {"hook_event_name": "SessionEnd", "reason": "logout"}


def commits(repo_dir: Path) -> list[str]:
    try:
        return [c.message for c in git.Repo(repo_dir).iter_commits()]
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return []


def test_session_end_does_nothing_without_auto_commit(run_hook, seeded, tmp_path) -> None:
    assert_silent(run_hook("session-end", end()))
    assert not (tmp_path / "store" / ".git").exists()


def test_session_end_commits_what_changed_with_a_message_listing_it(
    run_hook, seeded, store, project, tmp_path
) -> None:
    settings = project / ".claude" / "cortexgraph.local.md"
    settings.parent.mkdir()
    settings.write_text("---\nauto_commit: true\n---\n")
    repo_dir = tmp_path / "store"
    run = run_hook("session-end", end(), process=True)
    assert_silent(run)
    [first] = commits(repo_dir)
    assert first.startswith("cortexgraph: 5 memories added, 0 changed, 0 deleted")
    assert f"+ {seeded['auth']}: We decided to use OAuth2 with PKCE" in first
    assert "Claude Code session sess-1" in first
    assert "auto_commit" in run.stderr

    assert_silent(run_hook("session-end", end()))  # nothing changed: no new commit
    assert len(commits(repo_dir)) == 1

    (repo_dir / "notes.txt").write_text("a file of the user's, not committed by us")
    added = store.save("Invoices are numbered per calendar year.", now=int(time.time()))
    store.delete(seeded["lunch"])
    store.update(seeded["tabs"], content="The user prefers spaces over tabs in Go code now.")
    assert_silent(run_hook("session-end", end()))
    latest = commits(repo_dir)[0]
    assert latest.startswith("cortexgraph: 1 memories added, 1 changed, 1 deleted")
    assert f"+ {added.id}: Invoices are numbered per calendar year." in latest
    assert f"~ {seeded['tabs']}: The user prefers spaces over tabs" in latest
    assert f"- {seeded['lunch']}: Team lunch is on Fridays" in latest
    repo = git.Repo(repo_dir)
    assert "notes.txt" not in repo.head.commit.tree and "notes.txt" in repo.untracked_files
    committed = repo.head.commit.tree["memories.jsonl"].data_stream.read()
    assert committed == (repo_dir / "memories.jsonl").read_bytes()
