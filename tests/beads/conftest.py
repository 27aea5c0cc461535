"""Fixtures for the beads tracker: a machine without git identity, user repos, a strict reader."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


class FakeClock:
    """Deterministic time: each reading moves one second on."""

    def __init__(self, start: float = T0) -> None:
        self.now = start

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(autouse=True)
def fresh_machine(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No global or system git config, no identity in the environment: a fresh machine."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "no-gitconfig"))
    for var in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "EMAIL",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
    ):
        monkeypatch.delenv(var, raising=False)


def git(repo: Path, *args: str) -> str:
    """Real git as the user (and as an oracle for what we wrote)."""
    return subprocess.run(
        ["git", "-c", "user.name=Alice", "-c", "user.email=alice@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def git_cmd() -> Callable[..., str]:
    return git


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    """A project with history, a modified tracked file, a staged file and an untracked one."""
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# project\n")
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("print('v1')\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial")
    (repo / "src" / "app.py").write_text("print('v2')\n")
    git(repo, "commit", "-q", "-am", "second")
    # uncommitted work of the user
    (repo / "README.md").write_text("# project\n\nwork in progress\n")
    (repo / "staged.txt").write_text("staged but not committed\n")
    git(repo, "add", "staged.txt")
    (repo / "scratch.txt").write_text("untracked\n")
    return repo


# -- a strict reader of the beads issue schema (beads internal/types/types.go) ---------------

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")
_STRING = {
    "id",
    "title",
    "description",
    "design",
    "acceptance_criteria",
    "notes",
    "status",
    "issue_type",
    "assignee",
    "created_by",
    "close_reason",
    "closed_by_session",
    "external_ref",
    "compacted_at_commit",
    "deleted_by",
    "delete_reason",
    "original_type",
    "sender",
    "await_type",
    "await_id",
    "source_formula",
    "source_location",
    "hook_bead",
    "role_bead",
    "agent_state",
    "role_type",
    "rig",
    "mol_type",
    "event_kind",
    "actor",
    "target",
    "payload",
    "owner",
}
_INT = {"priority", "estimated_minutes", "compaction_level", "original_size", "timeout"}
_BOOL = {"ephemeral", "pinned", "is_template"}
_TIME = {
    "created_at",
    "updated_at",
    "closed_at",
    "due_at",
    "defer_until",
    "compacted_at",
    "deleted_at",
    "last_activity",
}
_LIST = {"labels", "dependencies", "comments", "bonded_from", "validations", "waiters"}
_OBJECT = {"creator"}
_ANY = {"metadata"}  # beads: any JSON value
ALLOWED = {"_type"} | _STRING | _INT | _BOOL | _TIME | _LIST | _OBJECT | _ANY
STATUSES = {"open", "in_progress", "blocked", "deferred", "closed", "tombstone", "pinned", "hooked"}
TYPES = {"bug", "feature", "task", "epic", "chore"}


def _time(value: Any, where: str) -> datetime:
    assert isinstance(value, str) and _RFC3339.match(value), f"{where}: not RFC 3339: {value!r}"
    head, _, frac_zone = value.partition(".")
    if frac_zone:
        digits = re.match(r"\d+", frac_zone).group(0)  # type: ignore[union-attr]
        value = f"{head}.{digits[:6].ljust(6, '0')}{frac_zone[len(digits) :]}"
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def strict_read(line: str, prefix: str = "cg", *, allow_unknown: bool = False) -> dict[str, Any]:
    """Parse one line as beads would, failing loudly on anything beads would reject."""
    rec = json.loads(line)
    assert isinstance(rec, dict)
    unknown = set(rec) - ALLOWED
    assert allow_unknown or not unknown, f"fields beads does not define: {unknown}"
    assert rec.get("_type", "issue") == "issue"
    for key in ("id", "title", "status", "priority", "issue_type", "created_at", "updated_at"):
        assert key in rec, f"missing {key}"
    for key, value in rec.items():
        if key in _STRING:
            assert isinstance(value, str), f"{key} must be a string"
        elif key in _INT:
            assert isinstance(value, int) and not isinstance(value, bool), f"{key} must be int"
        elif key in _BOOL:
            assert isinstance(value, bool), key
        elif key in _LIST:
            assert isinstance(value, list), key
        elif key in _OBJECT:
            assert isinstance(value, dict), key
    assert re.fullmatch(rf"{re.escape(prefix)}-[0-9a-z]{{3,8}}", rec["id"]), rec["id"]
    assert 1 <= len(rec["title"]) <= 500
    assert 0 <= rec["priority"] <= 4
    assert rec["status"] in STATUSES
    assert rec["issue_type"] in TYPES
    assert all(isinstance(x, str) for x in rec.get("labels", []))
    out = dict(rec)
    for key in _TIME & set(rec):
        out[key] = _time(rec[key], key)
    # closed_at is set if and only if the issue is closed (Issue.Validate)
    assert (rec["status"] == "closed") == ("closed_at" in rec), "closed_at invariant"
    for dep in rec.get("dependencies", []):
        assert isinstance(dep["issue_id"], str) and isinstance(dep["depends_on_id"], str)
        assert isinstance(dep["type"], str) and 0 < len(dep["type"]) <= 50
        _time(dep["created_at"], "dependency.created_at")
    for c in rec.get("comments", []):
        assert isinstance(c["id"], int) and isinstance(c["text"], str)
        _time(c["created_at"], "comment.created_at")
    out.setdefault("labels", [])
    out.setdefault("metadata", {})
    out.setdefault("description", "")
    return out


@pytest.fixture
def strict_reader() -> Callable[..., dict[str, Any]]:
    return strict_read
