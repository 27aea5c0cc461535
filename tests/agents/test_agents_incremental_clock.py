"""A run whose clock is before the last run's (issue 32): a clock set back, a VM restored
from a snapshot, a deployment's ``now`` parameter. The last run judged every unchanged memory
at a later moment than this run's, so its word does not stand: this run looks at every memory,
as a full run at its moment does, and says why.
"""

from __future__ import annotations

from agents_helpers import NOW, add
from fakes import RecordingSink

from cortexgraph.agents import incremental
from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.agents.pipeline import Pipeline, run_agents
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.decay import DAY


def _pipeline(store):
    return Pipeline(store, sink=RecordingSink(), tracker=InMemoryIssueTracker())


def test_a_run_before_the_last_one_judges_as_a_full_run_then():
    store = InMemoryStore()
    # Used five times; its promotion window (14 days from creation) closes between the runs.
    m = add(
        store,
        "The staging database is rebuilt nightly",
        age_days=14.0,
        use_count=5,
        strength=0.5,
        used_days_ago=10,
    )
    add(store, "We deploy on Tuesdays.", age_days=1)
    last = _pipeline(store)
    changes = incremental.begin(last, None, NOW + DAY)
    report = run_agents(last, now=NOW + DAY, scope=last.scope, dry_run=True)
    assert report.reports["promote"].promotions == ()  # its window closed
    state = incremental.state_after(last, changes, report, NOW + DAY)

    earlier = NOW - DAY / 2  # the clock set back
    full = run_agents(_pipeline(store), now=earlier, dry_run=True)
    assert [p.memory_id for p in full.reports["promote"].promotions] == [m.id]
    pipe = _pipeline(store)
    changes = incremental.begin(pipe, state, earlier)
    again = run_agents(pipe, now=earlier, dry_run=True, scope=pipe.scope)
    assert [p.memory_id for p in again.reports["promote"].promotions] == [m.id]
    assert pipe.scope is None and "clock" in (changes.full_because or "")
