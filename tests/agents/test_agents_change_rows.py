"""The incremental state's rows as arrays (storage.memory_rows): compared and refreshed without
a step per memory, with the same result as a memory at a time.

``ChangeTracker`` takes the array way where it can (the last state's rows as arrays and the
lines written since are known; the store still lists what ``scope`` listed, in its order) and
the walk otherwise: a state whose rows are a dict, and the listing handed over in reverse
order, make it walk, so each case is run both ways and must give the same scope, fingerprints
and verdict on other writers.
"""

from __future__ import annotations

import threading

from agents_helpers import NOW, add

from cortexgraph.agents.changes import ChangeTracker
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.decay import DAY
from cortexgraph.storage.memory_rows import MemoryRows

BEFORE = NOW - DAY


def _store_with_state(store):
    """A store and the state a run at BEFORE left of it (rows as the state file gives them)."""
    for k in range(8):
        add(store, f"note {k} about topic {k}", age_days=1.5 + k)
    add(store, "the cafeteria closes at five", age_days=6.0)  # crosses a bar by NOW
    tracker = ChangeTracker(store.config.decay)
    tracker.scope(store.list(), None, BEFORE)
    tracker.refresh(store.list(), BEFORE)
    state = tracker.state(BEFORE, (), {})
    return {**state, "memories": MemoryRows.of(state["memories"])}


def _both_ways(state):
    """The state with its rows as arrays (the array way), then as a dict (the walk)."""
    return [state, {**state, "memories": state["memories"].as_dict()}]


def test_rows_compared_as_arrays_give_the_walks_scope(store):
    state = _store_with_state(store)
    ids = [m.id for m in store.list()]
    store.touch(ids[1], now=NOW)
    store.delete(ids[2])  # the rows no longer line up: looked up by id
    new = add(store, "saved since", age_days=0.1)
    written = {ids[1], ids[2], new.id}
    found = []
    for last, order in zip(_both_ways(state), (1, -1), strict=True):
        tracker = ChangeTracker(store.config.decay)
        found.append((tracker.scope(store.list()[::order], last, NOW, written), tracker))
    (rows_scope, rows), (walk_scope, walk) = found
    assert isinstance(rows.prints, MemoryRows) and type(walk.prints) is dict
    assert rows_scope == walk_scope and rows.prints == walk.prints
    assert rows_scope.changed == {ids[1], new.id} and rows_scope.removed == 1
    assert rows_scope.crossing  # the cafeteria, by time alone


def test_refresh_by_rows_tells_own_and_others_writes_as_the_walk_does(store):
    state = _store_with_state(store)
    ids = [m.id for m in store.list()]
    results = []  # (tracker, the memory the run saved)
    twin = InMemoryStore.copy_of(store)  # the same memories, for the walk
    for last, order, held in zip(_both_ways(state), (1, -1), (store, twin), strict=True):
        tracker = ChangeTracker(held.config.decay)
        with held.recording_writes() as writes:
            tracker.scope(held.list()[::order], last, NOW, set())
            mine = held.save("the run's own merge", now=NOW)  # created by the run
            held.update(ids[3], content="rewritten")  # changed by the run
            other = threading.Thread(target=lambda s=held: s.touch(ids[4], now=NOW))
            other.start()
            other.join()
            tracker.refresh(held.list()[::order], NOW, writes)
        results.append((tracker, mine.id))
    (rows, _), (walk, _) = results
    assert isinstance(rows.prints, MemoryRows) and type(walk.prints) is dict
    assert rows.others_wrote and walk.others_wrote  # the touch beside the run
    for tracker, mine in results:
        assert mine in tracker.prints and ids[4] in tracker.prints
    # the touched one keeps the fingerprint the run started from, in both ways
    assert rows.prints[ids[4]] == walk.prints[ids[4]]
    assert rows.prints[ids[4]][0] == state["memories"][ids[4]][0]
    assert rows.prints[ids[3]][0] != state["memories"][ids[3]][0]
