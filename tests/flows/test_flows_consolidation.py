from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cortexgraph.cli.consolidate import app
from cortexgraph.flows.consolidation import (
    RunOptions,
    consolidate,
    make_task_runner,
    run_pipeline,
)
from cortexgraph.settings import load_settings
from cortexgraph.storage import open_store
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.user_store import RUNS_FILE

NOW = 1_760_000_000.0 + 3600  # an hour after seeding


def _tree_bytes(*roots):
    out = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file():
                out[str(p)] = p.read_bytes()
            else:
                out[str(p)] = None
    return out


def _settings(store_dir, vault, **kw):
    return load_settings(storage_path=store_dir, ltm_vault_path=vault, beads_enabled=False, **kw)


def test_dry_run_writes_nothing_at_all(prefect_harness, demo_dirs):
    store_dir, vault = demo_dirs
    before = _tree_bytes(store_dir, vault)
    report = run_pipeline(_settings(store_dir, vault), RunOptions(dry_run=True, now=NOW))
    assert report.reports["cluster"].method == "embeddings:all-MiniLM-L6-v2"
    assert report.dry_run
    assert report.reports["merge"].count("previewed") >= 3
    assert report.reports["promote"].promotions  # it shows what it would promote
    assert report.reports["relations"].discovered
    assert _tree_bytes(store_dir, vault) == before


def test_live_run_changes_store_and_vault(prefect_harness, demo_dirs):
    store_dir, vault = demo_dirs
    seen = []
    listener = RunOptions(now=NOW, on_step=lambda name, rep, s: seen.append(name))
    report = run_pipeline(_settings(store_dir, vault), listener)
    assert seen == ["decay", "cluster", "merge", "promote", "relations"]
    merged = report.reports["merge"].count("merged")
    assert merged >= 3 and report.reports["cluster"].method.startswith("embeddings")
    assert (store_dir / ".embeddings-all-MiniLM-L6-v2.npz").is_file()  # kept for the next run
    store = open_store(store_dir)
    archived = store.list(status=MemoryStatus.ARCHIVED)
    assert len(archived) == report.reports["merge"].archived
    promoted = store.list(status=MemoryStatus.PROMOTED)
    assert len(promoted) == len(report.reports["promote"].promotions) > 0
    for m in promoted:
        assert (vault / m.promoted_to).is_file()
    assert len(store.relations(relation_type="consolidated_from")) == len(archived)
    # the second run judges what the first merged after its decay step: nothing new to do
    settle = run_pipeline(_settings(store_dir, vault), RunOptions(now=NOW))
    assert settle.scope is not None and not settle.scope.changed
    assert settle.reports["merge"].count("merged") == 0
    assert settle.reports["promote"].promotions == ()
    # a third run: nothing changed, so it does not even open the store
    # (tests/flows/test_flows_untouched_run.py); only its record is written
    before = _tree_bytes(store_dir, vault)
    again = run_pipeline(_settings(store_dir, vault), RunOptions(now=NOW))
    assert again.scope is not None and again.scope.empty
    assert {r.skipped for r in again.reports.values()} == {again.scope.describe()}
    after = _tree_bytes(store_dir, vault)
    runs = str(store_dir / "consolidation-runs.jsonl")
    assert after.pop(runs) != before.pop(runs) and after == before


def test_single_agent_and_unknown_agent(prefect_harness, demo_dirs):
    store_dir, vault = demo_dirs
    report = run_pipeline(
        _settings(store_dir, vault), RunOptions(agents=("decay",), use_embeddings=False, now=NOW)
    )
    assert report.agents == ("decay",) and list(report.reports) == ["decay"]
    with pytest.raises(InvalidInputError, match="unknown agent"):
        RunOptions(agents=("nope",))
    with pytest.raises(InvalidInputError, match="unknown agent"):  # a deployment's parameter
        consolidate(storage_path=str(store_dir), vault_path=str(vault), agents=["nope"])
    with pytest.raises(InvalidInputError):
        make_task_runner("spark")


def test_cli_json_status_and_scheduled(prefect_harness, demo_dirs, monkeypatch):
    store_dir, vault = demo_dirs
    monkeypatch.setenv("CORTEXGRAPH_BEADS_ENABLED", "false")
    runner = CliRunner()
    common = ["--storage-path", str(store_dir), "--vault", str(vault), "--no-embeddings"]
    res = runner.invoke(app, [*common, "--json", "--agent", "decay", "--agent", "cluster"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output.strip().splitlines()[-1])
    assert data["agents"] == ["decay", "cluster"] and not data["dry_run"]
    assert (store_dir / RUNS_FILE).is_file()
    res = runner.invoke(app, [*common, "--json", "status"])
    last = json.loads(res.output.strip().splitlines()[-1])
    assert last["agents"] == ["decay", "cluster"] and "decay" in last["summaries"]
    res = runner.invoke(app, [*common, "--json", "--scheduled", "--interval-hours", "5"])
    assert json.loads(res.output.strip().splitlines()[-1])["skipped"] is True
    res = runner.invoke(app, [*common, "--agent", "nope"])
    assert res.exit_code == 1 and "unknown agent" in res.output


def test_cli_dry_run_on_missing_store_fails_cleanly(prefect_harness, tmp_path):
    res = CliRunner().invoke(app, ["--storage-path", str(tmp_path / "none"), "--dry-run"])
    assert res.exit_code == 1 and "no store at" in res.output
    assert not (tmp_path / "none").exists()


def test_live_run_with_beads_commits_once_listing_each_agents_changes(prefect_harness, demo_dirs):
    from cortexgraph.storage.beads import open_tracker

    store_dir, vault = demo_dirs
    settings = load_settings(storage_path=store_dir, ltm_vault_path=vault, beads_enabled=True)
    report = run_pipeline(settings, RunOptions(now=NOW))
    assert report.reports["merge"].count("merged") >= 3
    tracker = open_tracker(store_dir, search_parents=False, init=False)
    commits = tracker.history(limit=100)
    assert len(commits) == 1  # the whole run's issue changes: one rewrite, one commit
    message = commits[0].message
    assert message.startswith("consolidation: ")
    sections = dict(part.split(":\n", 1) for part in message.split("\n\n")[1:])
    assert {"cluster-detector", "semantic-merge"} <= set(sections)
    opened = [i for i in tracker.query() if "consolidation:cluster" in i.labels]
    closed = [i for i in tracker.query(status="closed") if i.assignee == "semantic-merge"]
    assert opened and all(f"{i.id}: opened" in sections["cluster-detector"] for i in opened)
    assert closed and all(f"\n{i.id}: closed" in "\n" + sections["semantic-merge"] for i in closed)
    # every change is in git: the work tree's issue file is the committed one
    assert tracker.repo.git.status("--porcelain", "--", ".beads") == ""
    assert not (store_dir / ".git" / "cortexgraph-beads.pending").exists()
    assert [c.sha for c in tracker.history(closed[0].id)] == [commits[0].sha]
