"""1.x's documented Python imports: ``cortexgraph.agents`` (Scheduler and the five agents, each
opening the configured store itself) and ``cortexgraph.agents.beads_integration``."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from compat_helpers import NOW, PARAPHRASES, PYTHON, clean_env, folder_bytes

from cortexgraph.storage import open_store

DAY = 86400


@pytest.fixture
def configured(tmp_path, monkeypatch):
    """A store with paraphrases, fading and well-used memories; settings only in the env."""
    store = open_store(tmp_path / "stm")
    for text in PARAPHRASES:
        store.save(text, entities=["python", "tabs"], now=NOW - 3600)
    for text in (
        "The fax manual went missing",
        "Parking is on level three",
        "Toner comes from the shop downstairs",
    ):
        store.save(text, now=NOW - 40 * DAY)
    used = store.save(
        "The ledger runs on PostgreSQL", entities=["postgresql", "ledger"], now=NOW - DAY
    )
    store.update(used.id, use_count=6, last_used=int(NOW - 3600))
    for key, value in clean_env(tmp_path, CORTEXGRAPH_BEADS_ENABLED="false").items():
        if key.startswith(("CORTEXGRAPH_", "LTM_")):
            monkeypatch.setenv(key, value)
    return tmp_path


def test_documented_imports_resolve_to_the_agents_package():
    import cortexgraph.agents as compat
    from cortexgraph import agents
    from cortexgraph.agents import (  # noqa: F401 - the documented import line
        ClusterDetector,
        DecayAnalyzer,
        LTMPromoter,
        RelationshipDiscovery,
        Scheduler,
        SemanticMerge,
    )
    from cortexgraph.agents.beads_integration import (  # noqa: F401
        claim_issue,
        close_issue,
        create_consolidation_issue,
        query_consolidation_issues,
    )

    assert compat is agents and Scheduler.__module__ == "cortexgraph.flows.agents_api"
    import cortexgraph.agents.decay_analyzer as real
    from cortexgraph.agents.decay_analyzer import DecayAnalyzer as same

    assert same is real.DecayAnalyzer  # one module, not a second copy
    with pytest.raises(AttributeError):
        compat.NoSuchAgent  # noqa: B018


@pytest.mark.slow
def test_scheduler_dry_run_pipeline_is_the_flow_and_writes_nothing(configured, prefect_harness):
    from cortexgraph.agents import Scheduler
    from cortexgraph.flows.consolidation import RunOptions, run_pipeline
    from cortexgraph.settings import load_settings

    before = folder_bytes(configured / "stm")
    results = Scheduler(dry_run=True, now=NOW).run_pipeline()
    assert list(results) == ["decay", "cluster", "merge", "promote", "relations"]
    assert folder_bytes(configured / "stm") == before
    # what `cortexgraph-consolidate --dry-run` runs (the flow, wired from the same settings)
    direct = run_pipeline(load_settings(), RunOptions(dry_run=True, now=NOW))
    assert folder_bytes(configured / "stm") == before
    assert [f.memory_id for f in results["decay"]] == [
        f.memory_id for f in direct.reports["decay"].findings
    ]
    assert {c.cluster_id for c in results["cluster"]} == {
        c.cluster_id for c in direct.reports["cluster"].clusters
    }
    assert results["decay"][0].urgency in ("high", "medium", "low")
    assert {"memory_id", "score", "urgency", "action"} <= set(dir(results["decay"][0]))
    (cluster,) = results["cluster"]
    assert len(cluster.memory_ids) == 3 and cluster.action in ("merge", "review", "keep")


def test_each_agent_runs_alone_with_1x_options(configured):
    from cortexgraph.agents import ClusterDetector, DecayAnalyzer, LTMPromoter, SemanticMerge

    assert len(DecayAnalyzer(dry_run=True, now=NOW).run()) == 3
    (c,) = ClusterDetector(
        dry_run=True, now=NOW, similarity_threshold=0.3, min_cluster_size=3
    ).run()
    assert c.size == 3
    assert ClusterDetector(dry_run=True, now=NOW, similarity_threshold=0.99).run() == []
    assert ClusterDetector(dry_run=True, now=NOW, min_cluster_size=4).run() == []
    (p,) = LTMPromoter(dry_run=True, now=NOW).run()
    assert p.criteria_met and p.vault_path is None  # a dry run writes no note
    assert SemanticMerge(dry_run=True, now=NOW).run() == []  # no merge issue is open
    with pytest.raises(TypeError):
        DecayAnalyzer(dry_run=True, similarity_threshold=0.5)


def test_live_run_is_recorded_and_run_scheduled_respects_the_interval(configured):
    from cortexgraph.agents import RelationshipDiscovery, Scheduler

    scheduler = Scheduler(now=NOW)
    decay = scheduler.run_agent("decay")
    assert decay and (configured / "stm" / "consolidation-runs.jsonl").is_file()
    skipped = scheduler.run_scheduled(interval_hours=1)
    assert skipped["skipped"] and "< 1 h" in skipped["reason"]
    due = Scheduler(now=NOW).run_scheduled(interval_hours=1, force=True)
    assert not due["skipped"] and set(due["results"]) >= {"decay", "merge"}
    merged = [o for o in due["results"]["merge"] if o.success]
    assert merged and merged[0].new_memory_id is not None
    relations = RelationshipDiscovery(
        dry_run=True, now=NOW, min_shared_entities=1, min_confidence=0.1
    ).run()
    assert all(r.relation_type == "related" and r.reasoning for r in relations)


def test_beads_helpers_on_the_configured_tracker(tmp_path, monkeypatch):
    from cortexgraph.agents.beads_integration import (
        claim_issue,
        close_issue,
        create_consolidation_issue,
        query_consolidation_issues,
    )

    monkeypatch.setenv("CORTEXGRAPH_STORAGE_PATH", str(tmp_path / "stm"))
    monkeypatch.setenv("CORTEXGRAPH_BEADS_REPO", str(tmp_path / "beads"))
    (tmp_path / "beads").mkdir()
    issue_id = create_consolidation_issue(
        agent="decay", memory_ids=["mem-123", "mem-456"], action="reinforce", urgency="high"
    )
    again = create_consolidation_issue(
        agent="decay", memory_ids=["mem-456", "mem-123"], action="reinforce", urgency="high"
    )
    assert again == issue_id
    (issue,) = query_consolidation_issues(agent="decay", status="open")
    assert issue["id"] == issue_id and "consolidation:decay" in issue["labels"]
    assert issue["metadata"]["memory_ids"] == ["mem-123", "mem-456"]
    assert query_consolidation_issues(agent="cluster") == []
    assert claim_issue(issue_id) is True
    assert claim_issue(issue_id, "someone-else") is False
    assert close_issue(issue_id, "Processed successfully") is True
    assert query_consolidation_issues(agent="decay", status="open") == []
    assert (tmp_path / "beads" / ".beads" / "issues.jsonl").is_file()


SCRIPT = """
import json
from cortexgraph.agents import Scheduler, DecayAnalyzer
s = Scheduler()
out = s.run_scheduled()
print(json.dumps({"skipped": out["skipped"], "reason": out.get("reason"),
                  "decay": len(DecayAnalyzer(dry_run=True).run())}))
"""


def test_a_1x_script_in_its_own_process_reads_the_interval(tmp_path, prefect_harness):
    """The due run's flow runs on the session's Prefect server (PREFECT_API_URL)."""
    store = open_store(tmp_path / "stm")
    store.save("An old detail nobody used", now=time.time() - 40 * DAY)
    runs = tmp_path / "stm" / "consolidation-runs.jsonl"
    runs.write_text(json.dumps({"finished_at": time.time() - 1.5 * 3600, "agents": []}) + "\n")
    env = clean_env(
        tmp_path, CORTEXGRAPH_BEADS_ENABLED="false", CORTEXGRAPH_CONSOLIDATION_INTERVAL="7200"
    )
    done = subprocess.run(
        [PYTHON, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["skipped"] and "< 2 h" in out["reason"] and out["decay"] == 1
    env["CORTEXGRAPH_CONSOLIDATION_INTERVAL"] = "3600"  # 1.5 h ago is now due
    done = subprocess.run(
        [PYTHON, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["skipped"] is False
    assert len(runs.read_text().splitlines()) == 2


if sys.platform == "win32":  # pragma: no cover
    pytestmark = pytest.mark.skip("POSIX paths")
