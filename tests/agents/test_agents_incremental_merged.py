"""A memory a run's merge makes is judged by the next run's decay step (issue 32).

The merge runs after the decay step, so the run that makes a merged memory never scores it;
a full run an hour later lists it fading (its digest, gc) when its sources were old. The next
incremental run must judge it too, though nothing changed since.
"""

from __future__ import annotations

from agents_helpers import NOW, add
from fakes import HashingEmbedder, RecordingSink

from cortexgraph.agents import incremental
from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.agents.pipeline import Pipeline, run_agents
from cortexgraph.storage import InMemoryStore


def _judged(report):
    return {(f.memory_id, f.urgency, f.action) for f in report.reports["decay"].findings}


def test_the_next_run_judges_what_the_last_one_merged_after_its_decay_step():
    store, tracker, embedder = InMemoryStore(), InMemoryIssueTracker(), HashingEmbedder()
    add(store, "The ledger uses PostgreSQL 16.", entities=["ledger", "PostgreSQL"], age_days=40)
    add(store, "the ledger uses postgresql 16!", entities=["ledger", "PostgreSQL"], age_days=39)
    add(store, "We deploy on Tuesdays.", age_days=1)

    def pipeline():
        return Pipeline(store, embedder=embedder, sink=RecordingSink(), tracker=tracker)

    first = pipeline()
    changes = incremental.begin(first, None, NOW)
    report = run_agents(first, now=NOW, scope=first.scope)
    (merged,) = [o.merged_id for o in report.reports["merge"].outcomes if o.merged_id]
    state = incremental.state_after(first, changes, report, NOW)

    later = NOW + 3600
    full = run_agents(pipeline(), now=later, dry_run=True)
    assert merged in {f.memory_id for f in full.reports["decay"].findings}  # fading

    nxt = pipeline()
    incremental.begin(nxt, state, later)
    assert nxt.scope is not None and merged in nxt.scope.ids
    again = run_agents(nxt, now=later, dry_run=True, scope=nxt.scope)
    assert _judged(again) == _judged(full)
