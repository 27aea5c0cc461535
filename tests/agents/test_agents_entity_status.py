"""An incremental run relates what an entity's changed standing makes relatable, as a full run.

The relations step leaves out entities on more memories than the ceiling (8% of the store, at
least 20, at most 200) and pairs every memory naming a rare entity (on at most 12 memories and
5% of the store) whatever else it names. Both standings are the whole store's: a memory saved,
merged or archived anywhere moves the ceiling and the counts, so an entity can stop being too
common, become too common, or become rare though none of the memories naming it changed. A full
run then pairs memories an incremental run (which pairs only what holds a changed memory) never
looked at: bench/soak_incremental.py found a full run adding five such relations after twelve
hourly runs. Here each way happens deterministically, and the incremental run must leave the
weekly full run nothing to add.
"""

from __future__ import annotations

import random

import pytest
from agents_helpers import NOW, add
from fakes import RecordingSink

from cortexgraph.agents import incremental
from cortexgraph.agents.pipeline import Pipeline, PipelineConfig, run_agents
from cortexgraph.agents.relationship_discovery import RelationshipConfig
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.decay import DAY
from cortexgraph.storage.models import MemoryStatus

BEFORE = NOW - DAY


def _pipeline(store, tracker, embedder, config=None):
    return Pipeline(store, embedder=embedder, sink=RecordingSink(), tracker=tracker, config=config)


def _related(report):
    return {frozenset((d.from_id, d.to_id)) for d in report.reports["relations"].discovered}


def _first_run(store, tracker, embedder, config=None):
    pipe = _pipeline(store, tracker, embedder, config)
    changes = incremental.begin(pipe, None, BEFORE)
    first = run_agents(pipe, now=BEFORE, scope=pipe.scope)
    return first, incremental.state_after(pipe, changes, first, BEFORE)


def _incremental_then_full(store, tracker, embedder, state, config=None):
    """The next hourly run (incremental), then what the weekly full run would still add."""
    pipe = _pipeline(store, tracker, embedder, config)
    incremental.begin(pipe, state, NOW)
    assert pipe.scope is not None
    report = run_agents(pipe, now=NOW, scope=pipe.scope)
    full = run_agents(_pipeline(store, tracker, embedder, config), now=NOW, dry_run=True)
    assert full.scope is None
    return report, full


def _filler(store, n, age_days=20.0, tag="x"):
    """``n`` memories of their own words and one entity each: the store's size, nothing more."""
    return [
        add(store, f"q{k}{tag}a q{k}{tag}b", entities=[f"solo {k}{tag}"], age_days=age_days)
        for k in range(n)
    ]


def _words(k):
    return f"topic{k} item{k} entry{k}"


@pytest.mark.parametrize("how", ["two of its memories archived", "the store grew"])
def test_an_entity_no_longer_too_common_relates_its_memories(store, tracker, embedder, how):
    # 22 memories name Atlas and Borealis, an hour apart: over the ceiling of a 260-memory
    # store (20), so neither relates anything.
    _filler(store, 238)
    chain = [
        add(store, _words(k), entities=["Atlas", "Borealis"], age_days=3 - k / 24)
        for k in range(22)
    ]
    first, state = _first_run(store, tracker, embedder)
    assert {"atlas", "borealis"} <= set(first.reports["relations"].common_entities_skipped)
    assert not _related(first)

    if how == "two of its memories archived":
        for m in (chain[5], chain[12]):  # gc from the MCP server, say
            store.update(m.id, status=MemoryStatus.ARCHIVED)
    else:  # 40 saves elsewhere: 300 memories, a ceiling of 24
        _filler(store, 40, age_days=0.5, tag="y")

    report, full = _incremental_then_full(store, tracker, embedder, state)
    assert "atlas" not in report.reports["relations"].common_entities_skipped
    assert len(_related(report)) >= 19  # each of the chain with the one before it
    assert _related(full) == set()  # nothing left for the weekly full run


@pytest.mark.parametrize("m_is", ["kept", "archived meanwhile"])
def test_an_entity_turned_too_common_closes_the_gaps_its_memories_leave(
    store, tracker, embedder, m_is
):
    # Lars and Redis name a and b, an hour apart; between them in time, m names Lars and
    # Atlas, and c names Redis and Kafka: neither entity's time chain holds a and b side by
    # side, so a and b are not paired. Atlas is on 20 memories (the ceiling: not too common);
    # Lars and Redis on 15 each (not rare: a rare entity's chain holds every memory naming it).
    _filler(store, 200)
    for k in range(19):
        add(store, _words(k), entities=["Atlas", f"crew {k}"], age_days=6 - k / 24)
    for name, words in (("Lars", "desk"), ("Redis", "rack")):
        for k in range(12):
            add(store, f"{words}{k} {name}", entities=[name, f"{words} {k}"], age_days=10 + k)
    a = add(store, "alpha alpha", entities=["Lars", "Redis"], age_days=2.0)
    m = add(store, "mike mike", entities=["Lars", "Atlas"], age_days=2.0 - 1 / 24)
    add(store, "charlie charlie", entities=["Redis", "Kafka"], age_days=2.0 - 1.5 / 24)
    b = add(store, "bravo bravo", entities=["Lars", "Redis"], age_days=2.0 - 2 / 24)
    first, state = _first_run(store, tracker, embedder)
    assert frozenset((a.id, b.id)) not in _related(first)

    # More memories on Atlas: over the ceiling. m keeps one informative name (Lars), too
    # few to pair, and leaves Lars's chain: a and b are side by side in it. Or m is archived
    # meanwhile: it left a chain it was in by the last run's standing, not this one's.
    if m_is == "archived meanwhile":
        store.update(m.id, status=MemoryStatus.ARCHIVED)
    for k in range(1 if m_is == "kept" else 3):
        add(store, f"atlas again {k}", entities=["Atlas"], age_days=0.2)
    report, full = _incremental_then_full(store, tracker, embedder, state)
    assert "atlas" in report.reports["relations"].common_entities_skipped
    assert frozenset((a.id, b.id)) in _related(report)
    assert _related(full) == set()


def test_an_entity_turned_rare_pairs_every_memory_naming_it(store, tracker, embedder):
    # 13 memories name only Kafka: not rare (more than 12), and one name is too few to pair.
    _filler(store, 240)
    kafka = [add(store, _words(k), entities=["Kafka"], age_days=4 - k / 24) for k in range(13)]
    first, state = _first_run(store, tracker, embedder)
    assert not _related(first)

    store.update(kafka[6].id, status=MemoryStatus.ARCHIVED)  # 12: rare, paired whatever else
    report, full = _incremental_then_full(store, tracker, embedder, state)
    assert len(_related(report)) >= 11
    assert _related(full) == set()


# One shared rare name relates two memories at any weighted Jaccard: the IDF weights move with
# the store's size at every save, so a pair near the bar (0.35) crosses it by saves elsewhere
# alone, which only the weekly full run sees (agents.entity_standing says so). Without the bar
# every other way a pair becomes relatable is left to show.
ANY_JACCARD = PipelineConfig(relations=RelationshipConfig(rare_entity_min_jaccard=0.0))


@pytest.mark.parametrize("seed", range(16))
def test_random_changes_near_the_entity_bars_leave_the_full_run_nothing(tracker, embedder, seed):
    """Stores whose entities sit near the ceiling and the rare bar, then an hour of saves,
    archives and deletions: whatever the incremental run relates, the full run adds nothing."""
    rng = random.Random(seed)
    store = InMemoryStore()
    names = [f"name{k}" for k in range(14)]

    def save(age):
        k = rng.randrange(10**6)
        chosen = rng.sample(names, rng.choice((1, 2, 2, 3)))
        return add(store, f"w{k} v{k} u{k}", entities=chosen, age_days=age)

    memories = [save(rng.uniform(1, 30)) for _ in range(rng.randrange(60, 120))]
    _filler(store, rng.randrange(0, 200))
    first, state = _first_run(store, tracker, embedder, ANY_JACCARD)
    assert first.scope is None

    for m in rng.sample(memories, rng.randrange(0, 12)):
        store.update(m.id, status=MemoryStatus.ARCHIVED)
    for m in rng.sample(memories, rng.randrange(0, 4)):
        if store.get(m.id) is not None and store.get(m.id).status is MemoryStatus.ACTIVE:
            store.delete(m.id)
    for _ in range(rng.randrange(0, 30)):
        save(rng.uniform(0, 0.9))

    _, full = _incremental_then_full(store, tracker, embedder, state, ANY_JACCARD)
    assert _related(full) == set()
