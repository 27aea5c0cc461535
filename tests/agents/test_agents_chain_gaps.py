"""An incremental run relates the two memories a leaving memory made neighbours (chain_gaps).

The relations step pairs the memories naming a common entity by time, each with the one just
before it. When the memory between two of them leaves (archived since the last run, or merged
by this run into a memory dated at its sources' earliest time), those two become neighbours
though neither changed: a full run relates them. bench/soak_incremental.py found a full run
adding four such relations after twelve hourly incremental runs under live saves; here the same
happens deterministically, each way a memory leaves, and the incremental run must leave the full
run nothing to add.
"""

from __future__ import annotations

import pytest
from agents_helpers import NOW, add
from fakes import RecordingSink

from cortexgraph.agents import incremental
from cortexgraph.agents.common import LABEL_CLUSTER
from cortexgraph.agents.pipeline import Pipeline, run_agents
from cortexgraph.storage.decay import DAY
from cortexgraph.storage.models import MemoryStatus

BEFORE = NOW - DAY
# Distinct words: no two of these memories are alike, so nothing clusters on its own.
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo".split()


def _chain(store):
    """A memory on its own, then ten that name Lars and Redis (each entity on 10 memories:
    paired by time, each with the one before), an hour apart; returns them in time order."""
    old = add(store, "mike november oscar", entities=["papa"], age_days=5 + 1 / 24)
    chain = [
        add(store, f"{w} {w}", entities=["Lars", "Redis", f"thing {k}"], age_days=5 - k / 24)
        for k, w in enumerate(WORDS[:10])
    ]
    return [old, *chain]


def _pipeline(store, tracker, embedder):
    return Pipeline(store, embedder=embedder, sink=RecordingSink(), tracker=tracker)


def _related(report):
    return {frozenset((d.from_id, d.to_id)) for d in report.reports["relations"].discovered}


@pytest.mark.parametrize("leaves", ["archived since the last run", "merged by this run"])
def test_neighbours_of_a_memory_that_left_are_related_as_a_full_run_would(
    store, tracker, embedder, leaves
):
    old, *chain = _chain(store)
    pipe = _pipeline(store, tracker, embedder)
    changes = incremental.begin(pipe, None, BEFORE)
    first = run_agents(pipe, now=BEFORE, scope=pipe.scope)
    assert len(_related(first)) == 9  # each of the ten with the one before
    state = incremental.state_after(pipe, changes, first, BEFORE)

    a, gone, b = chain[4:7]
    if leaves == "archived since the last run":
        store.update(gone.id, status=MemoryStatus.ARCHIVED)  # gc from the MCP server, say
    else:
        # A merge waiting in the tracker (an earlier run's, skipped; or a person's): the
        # merged memory takes the old one's date, so ``gone`` leaves the chain. Something
        # new was saved meanwhile, as every hour.
        add(store, "quebec romeo", entities=["sierra"], age_days=0.1)
        tracker.create(
            "merge",
            labels=[LABEL_CLUSTER, "action:merge"],
            metadata={"memory_ids": [old.id, gone.id], "cohesion": 0.9},
        )

    pipe = _pipeline(store, tracker, embedder)
    incremental.begin(pipe, state, NOW)
    assert pipe.scope is not None
    assert a.id not in pipe.scope.ids and b.id not in pipe.scope.ids  # neither changed
    report = run_agents(pipe, now=NOW, scope=pipe.scope)
    assert store.get(gone.id).status is MemoryStatus.ARCHIVED
    assert frozenset((a.id, b.id)) in _related(report)

    full = run_agents(_pipeline(store, tracker, embedder), now=NOW, dry_run=True)
    assert full.scope is None
    assert _related(full) == set()  # nothing left for the weekly full run


def test_neighbours_of_a_deleted_memory_are_related_as_a_full_run_would(store, tracker, embedder):
    """A memory deleted since the last run (``delete_memory``) is gone with its names: no chain
    it was in can be told, so the relations step judges every pair, as a full run."""
    _, *chain = _chain(store)
    pipe = _pipeline(store, tracker, embedder)
    changes = incremental.begin(pipe, None, BEFORE)
    first = run_agents(pipe, now=BEFORE, scope=pipe.scope)
    state = incremental.state_after(pipe, changes, first, BEFORE)

    a, gone, b = chain[4:7]
    store.delete(gone.id)
    pipe = _pipeline(store, tracker, embedder)
    incremental.begin(pipe, state, NOW)
    assert pipe.scope is not None and pipe.scope.removed == 1 and not pipe.scope.changed
    report = run_agents(pipe, now=NOW, scope=pipe.scope)
    assert _related(report) == {frozenset((a.id, b.id))}  # the one pair a full run adds
    full = run_agents(_pipeline(store, tracker, embedder), now=NOW, dry_run=True)
    assert _related(full) == set()


def test_neighbours_of_a_memory_gc_archives_in_the_run_are_related(store, tracker, embedder):
    """A memory whose score fell under the forget threshold by time alone (crossing, not
    changed) and that this run's gc archives leaves its chains in the run itself: its
    neighbours are related now, not by the weekly full run (the archive is the run's own
    write, so no later run would see it leave)."""
    from cortexgraph.agents.decay_findings import DecayAnalyzerConfig, GcMode
    from cortexgraph.agents.pipeline import PipelineConfig
    from cortexgraph.storage.decay import crossing_time

    _, *chain = _chain(store)
    a, gone, b = chain[4:7]
    decay = store.config.decay
    # Its score falls under the forget threshold halfway between the two runs.
    falls = crossing_time(gone, decay.forget_threshold, decay) - gone.last_used
    gone = store.update(gone.id, last_used=int((BEFORE + NOW) / 2 - falls))
    gc = PipelineConfig(decay=DecayAnalyzerConfig(decay=decay, gc=GcMode.ARCHIVE))

    def pipeline():
        return Pipeline(store, embedder=embedder, sink=RecordingSink(), tracker=tracker, config=gc)

    pipe = pipeline()
    changes = incremental.begin(pipe, None, BEFORE)
    first = run_agents(pipe, now=BEFORE, scope=pipe.scope)
    assert store.get(gone.id).status is MemoryStatus.ACTIVE
    state = incremental.state_after(pipe, changes, first, BEFORE)

    pipe = pipeline()
    incremental.begin(pipe, state, NOW)
    assert pipe.scope is not None and pipe.scope.crossing >= {gone.id} and not pipe.scope.changed
    report = run_agents(pipe, now=NOW, scope=pipe.scope)
    assert store.get(gone.id).status is MemoryStatus.ARCHIVED  # gc, in this run
    assert frozenset((a.id, b.id)) in _related(report)
    full = run_agents(pipeline(), now=NOW, dry_run=True)
    assert _related(full) == set()
