"""`cortexgraph issues list|show|close` against a real tracker."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.cli.issues_cmd import app
from cortexgraph.settings import Settings
from cortexgraph.storage.beads import BeadsTracker, issue_as_json, open_tracker
from cortexgraph.user_store import open_issue_tracker

runner = CliRunner()


@pytest.fixture
def store(tmp_path, monkeypatch, clock):
    path = tmp_path / "stm"
    monkeypatch.setenv("CORTEXGRAPH_STORAGE_PATH", str(path))
    monkeypatch.delenv("CORTEXGRAPH_BEADS_REPO", raising=False)
    tracker = open_tracker(path, search_parents=False, clock=clock)
    a = tracker.create(
        "Merge 3 memories", labels=["consolidation:cluster"], metadata={"memory_ids": ["m1"]}
    )
    b = tracker.create("Decay m7", labels=["consolidation:decay", "urgency:high"], priority=1)
    c = tracker.create("Old one")
    tracker.close(c.id, "obsolete")
    return tracker, a, b, c


def _ok(args):
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_list_plain_and_json(store):
    tracker, a, b, c = store
    out = _ok(["list"])
    assert a.id in out and b.id in out and c.id not in out
    assert "Merge 3 memories" in out and "consolidation:cluster" in out
    assert c.id in _ok(["list", "--all"])
    data = json.loads(_ok(["list", "--json", "--label", "urgency:high"]))
    assert data == [issue_as_json(tracker.get(b.id))]
    closed = json.loads(_ok(["list", "--json", "--status", "closed"]))
    assert [d["id"] for d in closed] == [c.id] and closed[0]["close_reason"] == "obsolete"


def test_show_and_close(store, git_cmd):
    tracker, a, _, _ = store
    out = _ok(["show", a.id])
    assert "Merge 3 memories" in out and '"m1"' in out and "opened" in out
    _ok(["close", a.id, "--reason", "merged by hand"])
    assert tracker.get(a.id).close_reason == "merged by hand"
    assert git_cmd(tracker.path.parent.parent, "log", "-1", "--format=%s").strip() == (
        f"{a.id}: closed (merged by hand)"
    )
    shown = json.loads(_ok(["show", a.id.split("-", 1)[1], "--json"]))
    assert shown["status"] == "closed"
    assert next(h["message"] for h in shown["history"]) == f"{a.id}: closed (merged by hand)"
    bad = runner.invoke(app, ["close", "cg-nope", "-r", "x"])
    assert bad.exit_code == 1 and "cg-nope" in bad.output


def test_repo_option_and_missing_repository(user_repo, tmp_path, clock):
    tracker = open_tracker(user_repo, clock=clock)
    a = tracker.create("in the project")
    assert a.id in _ok(["list", "--repo", str(user_repo / "src")])
    missing = tmp_path / "nowhere"
    assert "no issues" in _ok(["list", "--repo", str(missing)])
    assert json.loads(_ok(["list", "--json", "--repo", str(missing)])) == []
    assert not missing.exists()


def test_open_issue_tracker_falls_back_to_memory(tmp_path, git_cmd):
    tracker, note = open_issue_tracker(Settings(storage_path=tmp_path / "s", beads_enabled=False))
    assert isinstance(tracker, InMemoryIssueTracker) and "disabled" in note
    bare = tmp_path / "bare.git"
    bare.mkdir()
    git_cmd(bare, "init", "-q", "--bare")
    tracker, note = open_issue_tracker(Settings(storage_path=tmp_path / "s", beads_repo=bare))
    assert isinstance(tracker, InMemoryIssueTracker) and "unusable" in note
    tracker, note = open_issue_tracker(Settings(storage_path=tmp_path / "s"))
    assert isinstance(tracker, BeadsTracker) and str(tmp_path / "s") in note
