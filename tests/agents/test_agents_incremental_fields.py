"""Every field an agent judges a memory by is one the change tracker sees (issue 32).

A memory edited in place (``store.update``, ``cortexgraph edit``, the entity step reading a
transcript line's mentions) must be looked at by the next incremental run whenever a full run
would decide otherwise about it: its creation time (the promotion window, the order of an
entity's time chain) and its mentions (what relations pair it by) as much as its content.
"""

from __future__ import annotations

from agents_helpers import NOW, add
from fakes import RecordingSink

from cortexgraph.agents import incremental
from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.agents.pipeline import Pipeline, run_agents
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.decay import DAY
from cortexgraph.storage.models import MENTIONS_KEY

LATER = NOW + 3600


def _pipeline(store, tracker):
    return Pipeline(store, sink=RecordingSink(), tracker=tracker)


def _first_state(store, tracker):
    pipe = _pipeline(store, tracker)
    changes = incremental.begin(pipe, None, NOW)
    report = run_agents(pipe, now=NOW, scope=pipe.scope)
    return incremental.state_after(pipe, changes, report, NOW)


def _both(store, tracker, state):
    """A full dry run and an incremental dry run at ``LATER``."""
    full = run_agents(_pipeline(store, tracker), now=LATER, dry_run=True)
    pipe = _pipeline(store, tracker)
    incremental.begin(pipe, state, LATER)
    return full, run_agents(pipe, now=LATER, dry_run=True, scope=pipe.scope)


def test_a_creation_time_edited_is_seen_by_the_next_run():
    store, tracker = InMemoryStore(), InMemoryIssueTracker()
    # Used often, but not lately and long after its promotion window closed: not promoted.
    m = add(
        store,
        "The staging database is rebuilt nightly",
        age_days=30,
        use_count=5,
        strength=0.5,
        used_days_ago=10,
    )
    state = _first_state(store, tracker)
    assert store.get(m.id).status == "active"

    store.update(m.id, created_at=int(NOW - 12 * DAY))  # the user corrects its date
    full, inc = _both(store, tracker, state)
    assert [p.memory_id for p in full.reports["promote"].promotions] == [m.id]
    assert [p.memory_id for p in inc.reports["promote"].promotions] == [m.id]


def test_mentions_read_into_a_transcript_line_are_seen_by_the_next_run():
    store, tracker = InMemoryStore(), InMemoryIssueTracker()
    a = add(store, "Alice: Bob and Carol moved the ledger to Postgres", entities=["Alice"])
    b = add(store, "Bob and Carol wrote the ledger runbook", entities=["Bob", "Carol"])
    state = _first_state(store, tracker)

    # The entity step reads the line's mentions in a later run (its batch limit, or spaCy
    # installed after the rules read it): only meta.extra changes.
    store.update(a.id, extra={**store.get(a.id).meta.extra, MENTIONS_KEY: ["Bob", "Carol"]})
    full, inc = _both(store, tracker, state)

    def pairs(report):
        return {frozenset((d.from_id, d.to_id)) for d in report.reports["relations"].discovered}

    assert pairs(full) == {frozenset((a.id, b.id))}
    assert pairs(inc) == pairs(full)
