"""A merge step retried after it failed half-way (issue 32).

The flow's merge task retries once (flows.consolidation): a merge step that raised after some
merges (a tracker that could not claim an issue) runs again, and the merged memories of the
first attempt are no longer among its outcomes (their sources are archived). The run's later
steps and the next runs must still look at them, as a full run does: they are new memories.
"""

from __future__ import annotations

from agents_helpers import NOW, add
from fakes import HashingEmbedder, RecordingSink

from cortexgraph.agents import incremental
from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.agents.pipeline import Pipeline, PipelineRun, run_agents
from cortexgraph.storage import InMemoryStore


class _ClaimFailsOnce(InMemoryIssueTracker):
    """The second claim fails once (the tracker's lock, a git error)."""

    def __init__(self) -> None:
        super().__init__()
        self.claims = 0

    def claim(self, issue_id, assignee):
        self.claims += 1
        if self.claims == 2:
            raise RuntimeError("issue store locked")
        return super().claim(issue_id, assignee)


def _related(report):
    return {frozenset((d.from_id, d.to_id)) for d in report.reports["relations"].discovered}


def test_what_a_failed_merge_attempt_made_is_looked_at():
    store = InMemoryStore()
    add(store, "Carol reviews the ledger changes", entities=["Carol", "ledger"], age_days=5)
    add(store, "Bob owns billing", entities=["Bob", "billing"], age_days=3)
    state_pipe = Pipeline(store, embedder=HashingEmbedder(), sink=RecordingSink())
    changes = incremental.begin(state_pipe, None, NOW - 3600)
    report = run_agents(state_pipe, now=NOW - 3600, scope=state_pipe.scope)
    state = incremental.state_after(state_pipe, changes, report, NOW - 3600)

    # Saved since: two restatements, each naming what one of those names.
    add(store, "The ledger uses PostgreSQL 16.", entities=["ledger", "Carol"], age_days=0.2)
    add(store, "the ledger uses postgresql 16!", entities=["ledger", "Carol"], age_days=0.1)
    add(store, "Bob moved the billing queue to Kafka", entities=["Bob", "billing"], age_days=0.2)
    add(store, "bob moved the billing queue to kafka!", entities=["Bob", "billing"], age_days=0.1)

    tracker = _ClaimFailsOnce()
    pipe = Pipeline(store, embedder=HashingEmbedder(), sink=RecordingSink(), tracker=tracker)
    changes = incremental.begin(pipe, state, NOW)
    run = PipelineRun(pipe, now=NOW)
    run.step("decay")
    clusters = run.step("cluster")
    assert len([c for c in clusters.clusters if c.action == "merge"]) == 2
    try:
        run.step("merge")
    except RuntimeError:
        run.step("merge")  # the task's retry
    made = {m.id for m in store.list(status="active") if "merge" in m.meta.extra}
    assert len(made) == 2  # one by each attempt
    run.step("promote")
    run.step("relations")
    state = incremental.state_after(pipe, changes, run.report(), NOW)

    later = NOW + 3600  # nothing left for a full run, nor for the next incremental one
    full = run_agents(Pipeline(store, sink=RecordingSink()), now=later, dry_run=True)
    nxt = Pipeline(store, sink=RecordingSink())
    incremental.begin(nxt, state, later)
    again = run_agents(nxt, now=later, dry_run=True, scope=nxt.scope)
    assert _related(full) == _related(again) == set()
    assert made <= pipe.scope.changed  # both were new to this run's promote and relations
