"""The incremental state's rows as arrays (storage.memory_rows): compared and refreshed without
a step per memory, with the same result as a memory at a time.

``ChangeTracker`` takes the array way where it can (the last state's rows as arrays and the
lines written since are known; the store still lists what ``scope`` listed, in its order) and
the walk otherwise: a state whose rows are a dict, and the listing handed over in reverse
order, make it walk, so each case is run both ways and must give the same scope, fingerprints
and verdict on other writers.
"""

from __future__ import annotations

import random
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


def _history(rng, store):
    """Random writes between two runs; the ids they wrote (the lines appended since)."""
    written = set()
    for _ in range(rng.randint(0, 6)):
        ids = [m.id for m in store.list()]
        if not ids:
            break
        op, chosen = rng.random(), rng.choice(ids)
        if op < 0.3:
            store.touch(chosen, now=NOW - 100)
        elif op < 0.5:
            store.delete(chosen)
        elif op < 0.8:
            chosen = add(store, f"new {rng.random()}", age_days=0.2).id
        written.add(chosen)  # else: a line that changed nothing
    return written


def _run_writes(rng, store, among):
    """A run's own writes and, from another thread, someone else's."""
    for _ in range(rng.randint(0, 5)):
        live = sorted(m.id for m in store.list() if m.id in among)
        if not live:
            return
        op, chosen = rng.random(), rng.choice(live)
        beside = None
        if op < 0.3:
            store.update(chosen, content=f"run {chosen}")
        elif op < 0.45:
            store.save(f"run's new {op}", now=NOW)
        elif op < 0.6:
            beside = threading.Thread(target=store.touch, args=(chosen,), kwargs={"now": NOW + 5})
        elif op < 0.7:
            beside = threading.Thread(target=store.save, args=(f"other {op}",), kwargs={"now": NOW})
        elif op < 0.8:
            store.delete(chosen)
        if beside is not None:
            beside.start()
            beside.join()


def test_rows_and_walk_agree_on_random_histories():
    rng = random.Random(32)
    by_rows = 0  # refreshes that took the array way
    for _ in range(120):
        store = InMemoryStore()
        for k in range(rng.randint(1, 25)):
            add(store, f"note {k} {rng.random()}", age_days=rng.uniform(0.1, 40),
                use_count=rng.randint(0, 6), strength=rng.uniform(1, 2))  # fmt: skip
        last_run = NOW - rng.uniform(0.1, 10) * DAY
        first = ChangeTracker(store.config.decay)
        first.scope(store.list(), None, last_run)
        first.refresh(store.list(), last_run)
        state = {**first.state(last_run, (), {})}
        state["memories"] = MemoryRows.of(state["memories"])
        written = _history(rng, store)
        twin = InMemoryStore.copy_of(store)  # the same history, for the walk
        kept = {m.id for m in store.list()}  # the ids both stores share
        run_seed = rng.random()  # the same run's writes on both
        found = []
        for last, order, held in zip(_both_ways(state), (1, -1), (store, twin), strict=True):
            tracker = ChangeTracker(held.config.decay)
            with held.recording_writes() as writes:
                scope = tracker.scope(held.list()[::order], last, NOW, written)
                at_start = dict(tracker.prints)
                _run_writes(random.Random(run_seed), held, kept)
                tracker.refresh(held.list()[::order], NOW, writes)
            after = {i: row for i, row in tracker.prints.items() if i in kept}
            new_rows = len(tracker.prints) - len(after)  # the run's own saves (new ids)
            found.append((scope, at_start, after, new_rows, tracker.others_wrote))
            by_rows += isinstance(tracker.prints, MemoryRows)
        assert found[0] == found[1]
    assert by_rows > 30
