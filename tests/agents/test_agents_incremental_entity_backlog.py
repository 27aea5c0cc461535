"""A run whose entity step left memories unread (issue 32).

The entity finder reads at most ``entity_batch_limit`` memories a run, newest first, and "the
rest wait for the next" (an import, a first run over a large store, spaCy installed after the
rules read them). A run that leaves some unread must not record its files as seen: the next
run after no change would be answered without opening the store, and read nothing more until
something else changed. A full run then reads the next batch and relates what it finds.
"""

from __future__ import annotations

from dataclasses import replace

from agents_helpers import NOW
from fakes import RecordingSink

from cortexgraph.activation.entity_batch import BatchEntityFinder
from cortexgraph.agents import incremental
from cortexgraph.agents.entity_reading import FOUND_KEY
from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.agents.pipeline import Pipeline, PipelineConfig, run_agents
from cortexgraph.agents.relationship_discovery import RelationshipConfig
from cortexgraph.storage import InMemoryStore

FILES = {"memories.jsonl": (1, 2, 3)}


def _pipeline(store):
    config = PipelineConfig(relations=replace(RelationshipConfig(), entity_batch_limit=2))
    pipe = Pipeline(store, sink=RecordingSink(), tracker=InMemoryIssueTracker(), config=config)
    pipe.relations.entity_finder = BatchEntityFinder(None)  # the rules
    return pipe


def _run(store, state, now):
    pipe = _pipeline(store)
    with store.recording_writes() as writes:
        pipe.relations.read_entities()  # as the flow and the MCP tool do, first
        changes = incremental.begin(pipe, state, now)
        report = run_agents(pipe, now=now, scope=pipe.scope)
        return incremental.state_after(pipe, changes, report, now, writes, FILES)


def test_a_run_that_left_memories_unread_is_not_recorded_as_seen():
    store = InMemoryStore()
    people = ["Alice", "Bob", "Carol", "Dana", "Erin", "Frank", "Grace"]
    places = ["Paris", "Rome", "Oslo", "Lima", "Cairo", "Quito", "Perth"]
    for k in range(7):  # nothing alike to merge
        store.save(f"{people[k]} flew to {places[k]} on day {k}.", now=NOW - 600 + k)
    state = _run(store, None, NOW)
    unread = [m for m in store.list() if FOUND_KEY not in m.meta.extra]
    assert unread  # the rest wait for the next run
    assert "files" not in state  # so the next run opens the store and reads them

    now = NOW
    while any(FOUND_KEY not in m.meta.extra for m in store.list()):
        now += 3600
        state = _run(store, state, now)
    state = _run(store, state, now + 3600)
    assert "files" in state  # all read: a run after no change may open nothing
