"""Incremental consolidation (issue 32): a run looks at what changed since the last one.

The equivalence test runs the same store twice after new saves, once incrementally and once in
full, and compares the decisions on the changed part.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from agents_helpers import NOW, add
from fakes import RecordingSink

from cortexgraph.agents import incremental
from cortexgraph.agents.changes import ChangeTracker, fingerprint
from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.agents.pipeline import Pipeline, run_agents
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.decay import (
    DAY,
    DecayConfig,
    DecayModel,
    crossing_time,
    memory_score,
)

BEFORE = NOW - DAY  # the last run's clock


@pytest.mark.parametrize("model", list(DecayModel))
def test_crossing_time_is_where_the_score_reaches_the_bar(store, model):
    config = DecayConfig(model=model)
    m = add(store, "a memory", age_days=1.0, use_count=2, strength=1.1)
    for bar in (0.35, 0.15, 0.05):
        t = crossing_time(m, bar, config)
        assert t > m.last_used
        assert math.isclose(memory_score(m, t, config), bar, rel_tol=1e-6)
        assert memory_score(m, t - 60, config) > bar > memory_score(m, t + 60, config)
    assert crossing_time(m, 5.0, config) == -math.inf  # never that high


def _base(store):
    """What the last run saw: facts, a restatement pair, entities, a fading memory."""
    add(store, "The ledger uses PostgreSQL 16.", entities=["ledger", "PostgreSQL"], age_days=3)
    add(store, "Alice runs the ledger service", entities=["ledger", "Alice"], age_days=3)
    add(store, "We deploy on Tuesdays.", use_count=3, strength=1.5, age_days=2)
    add(store, "Bob owns the billing queue", entities=["Bob", "billing"], age_days=2)
    add(store, "forgotten thing from long ago", age_days=60)
    # These two cross a decay bar (0.35, 0.15) by time alone between the runs.
    add(store, "the cafeteria closes at five", age_days=6.0)
    add(store, "the old parking receipt", age_days=16.3)
    for k in range(12):
        add(store, f"note {k} about topic {k} and nothing else", age_days=1.5 + k / 10)


def _new(store):
    """Saved since the last run: a restatement, related facts, one used often."""
    add(store, "the ledger uses postgresql 16!", entities=["ledger", "PostgreSQL"], age_days=0.5)
    add(store, "Bob moved the billing queue to Kafka", entities=["Bob", "billing"], age_days=0.4)
    add(store, "Carol reviews ledger changes", entities=["Carol", "ledger"], age_days=0.3)
    add(store, "The standup is at nine every day.", use_count=6, age_days=0.3, used_days_ago=0.1)


def _pipeline(store, tracker, embedder):
    return Pipeline(store, embedder=embedder, sink=RecordingSink(), tracker=tracker)


def _first_run(store, tracker, embedder):
    pipe = _pipeline(store, tracker, embedder)
    changes = incremental.begin(pipe, None, BEFORE)
    report = run_agents(pipe, now=BEFORE, scope=pipe.scope)
    assert report.scope is None  # no state yet: a full run
    return incremental.state_after(pipe, changes, report, BEFORE)


def _decisions(store, report, changed):
    """Decisions on the changed part (``changed``: contents), by content (a merge makes a new
    id each time)."""
    text = {m.id: m.content for m in store.list()}

    def touches(ids):
        return any(text[i] in changed for i in ids)

    merges = {
        frozenset(text[i] for i in o.source_ids)
        for o in report.reports["merge"].outcomes
        if touches(o.source_ids)
    }
    clusters = {
        (frozenset(text[i] for i in c.memory_ids), c.action)
        for c in report.reports["cluster"].clusters
        if touches(c.memory_ids)
    }
    promotions = {text[p.memory_id] for p in report.reports["promote"].promotions}
    relations = {
        frozenset((text[d.from_id], text[d.to_id]))
        for d in report.reports["relations"].discovered
        if touches((d.from_id, d.to_id))
    }
    decay = {
        (text[f.memory_id], f.urgency, f.action)
        for f in report.reports["decay"].findings
        if text[f.memory_id] in changed
    }
    return merges, clusters, promotions, relations, decay


def _store_after_new_saves(store, tracker, embedder):
    _base(store)
    state = _first_run(store, tracker, embedder)
    _new(store)
    return state


def _run_and_decide(store, pipe, changed):
    before = {m.id for m in store.list()}
    report = run_agents(pipe, now=NOW, scope=pipe.scope)
    made = {m.content for m in store.list() if m.id not in before}  # merged memories
    return _decisions(store, report, set(changed) | made)


def test_incremental_run_decides_as_a_full_run_on_what_changed(tracker, embedder):
    store, twin, twin_tracker = InMemoryStore(), InMemoryStore(), InMemoryIssueTracker()
    state = _store_after_new_saves(store, tracker, embedder)
    _store_after_new_saves(twin, twin_tracker, embedder)

    pipe = _pipeline(store, tracker, embedder)
    incremental.begin(pipe, state, NOW)
    scope = pipe.scope
    assert scope is not None and len(scope.changed) == 4
    changed = {store.get(i).content for i in scope.ids}
    part = _run_and_decide(store, pipe, changed)
    full = _run_and_decide(twin, _pipeline(twin, twin_tracker, embedder), changed)
    assert part == full
    merges, clusters, promotions, relations, decay = part
    # the decisions under test exist: a merge, a promotion, relations among the new memories
    assert merges and clusters and promotions and relations and decay


def _padding(store, n=400):
    """Older memories on subjects of their own; one in 20 also names the ledger, which is then
    neither rare nor too common: the changed memories' names reach a few dozen of them."""
    for k in range(n):
        names = [f"team {k}", f"project {k}"] + (["ledger"] if k % 20 == 0 else [])
        add(store, f"team {k} met about project {k}", entities=names, age_days=2 + k / 100)


def test_incremental_run_decides_as_a_full_run_when_its_names_reach_few(
    tracker, embedder, monkeypatch
):
    # The relations step then asks only the reached memories whether they can pair.
    from cortexgraph.agents.entity_postings import EntityPostings

    asked = []
    reached = EntityPostings.reached

    def counting(self, common, least):
        test = reached(self, common, least)
        return lambda mid: asked.append(mid) or test(mid)

    monkeypatch.setattr(EntityPostings, "reached", counting)
    store, twin, twin_tracker = InMemoryStore(), InMemoryStore(), InMemoryIssueTracker()
    for s in (store, twin):
        _padding(s)
    state = _store_after_new_saves(store, tracker, embedder)
    _store_after_new_saves(twin, twin_tracker, embedder)

    pipe = _pipeline(store, tracker, embedder)
    incremental.begin(pipe, state, NOW)
    assert pipe.scope is not None
    changed = {store.get(i).content for i in pipe.scope.ids}
    part = _run_and_decide(store, pipe, changed)
    assert asked and len(set(asked)) < 50  # of ~420 memories
    assert part == _run_and_decide(twin, _pipeline(twin, twin_tracker, embedder), changed)
    assert part[3]  # relations among the changed memories


def test_memories_crossing_a_bar_by_time_alone_are_in_scope(store, tracker, embedder):
    _base(store)
    state = _first_run(store, tracker, embedder)
    pipe = _pipeline(store, tracker, embedder)
    incremental.begin(pipe, state, NOW)
    assert pipe.scope is not None and not pipe.scope.changed
    config = store.config.decay
    crossed = {
        m.id
        for m in store.list()
        if any(
            (memory_score(m, BEFORE, config) > bar) != (memory_score(m, NOW, config) > bar)
            for bar in (0.35, 0.25, 0.15, 0.05)
        )
    }
    assert crossed  # the store was built so that some do
    assert crossed <= pipe.scope.crossing


def test_a_run_after_no_change_does_nearly_nothing_and_says_so(store, tracker, embedder):
    _base(store)
    state = _first_run(store, tracker, embedder)
    pipe = _pipeline(store, tracker, embedder)
    incremental.begin(pipe, state, BEFORE + 60)
    report = run_agents(pipe, now=BEFORE + 60, scope=pipe.scope)
    assert report.scope is not None and report.scope.empty
    assert "nothing changed since the last run at" in report.to_markdown()
    assert report.to_json()["incremental"]["nothing_changed"] is True
    assert report.reports["cluster"].scanned == 0
    assert report.reports["relations"].discovered == ()
    # no pair can hold a changed memory: no entity postings, no graph of the whole store
    assert report.reports["relations"].scanned == 0
    assert report.reports["relations"].graph is None
    assert "no memory changed since the last run" in report.to_markdown()
    assert report.reports["promote"].scanned == 0


def test_every_kind_of_change_changes_the_fingerprint(store):
    m = add(store, "the fact", entities=["fact"])
    before = fingerprint(m)
    for change in (
        {"content": "the fact, edited"},
        {"use_count": 1},
        {"last_used": m.last_used + 1},
        {"strength": 1.3},
        {"promoted_at": 5},
        {"entities": ("fact", "more")},
    ):
        assert fingerprint(m.with_changes(**change)) != before, change


def test_full_run_ignores_the_last_state(store, tracker, embedder):
    _base(store)
    state = _first_run(store, tracker, embedder)
    pipe = _pipeline(store, tracker, embedder)
    incremental.begin(pipe, state, NOW, full=True)
    assert pipe.scope is None
    assert ChangeTracker(store.config.decay).scope(store.list(), state, NOW) is not None


def test_a_run_after_no_change_writes_no_issue_and_keeps_the_fading_list(store, embedder):
    changes: list[str] = []
    tracker = InMemoryIssueTracker(on_change=changes.append)
    _base(store)
    state = _first_run(store, tracker, embedder)
    assert state["fading"]
    changes.clear()
    pipe = _pipeline(store, tracker, embedder)
    tracked = incremental.begin(pipe, state, BEFORE + 60)
    report = run_agents(pipe, now=BEFORE + 60, scope=pipe.scope)
    decay = report.reports["decay"]
    assert decay.skipped and decay.scanned == 0  # nothing scored: the last run's word stands
    assert changes == []
    after = incremental.state_after(pipe, tracked, report, BEFORE + 60)
    assert after["fading"] == state["fading"]  # the next run still re-judges them


def _digests(store, tracker):
    """Each open digest as a person reads it, memories by content (ids differ between twins)."""
    text = {m.id: m.content for m in store.list()}
    out = {}
    for i in tracker.query(labels=("decay:digest",)):
        if i.status == "closed":
            continue
        description = i.description
        for memory_id, content in text.items():
            description = description.replace(memory_id, content)
        meta = {k: v for k, v in i.metadata.items() if k != "memory_ids"}
        out[i.metadata["digest"]] = (
            i.title,
            description,
            meta,
            [text[m] for m in i.metadata["memory_ids"]],
        )
    return out


class _ListingStore(InMemoryStore):
    """Records each ``list`` call's status filter (decay's read of every active memory)."""

    def __init__(self) -> None:
        super().__init__()
        self.listed: list[object] = []

    def list(self, status=None, tags=None):
        self.listed.append(status)
        return super().list(status, tags)


@pytest.mark.parametrize("marks", [True, False], ids=["marks", "state-before-marks"])
def test_fading_memories_outside_the_scope_are_listed_not_judged_again(embedder, marks):
    """Their digests read as a full run writes them (title, count, listed memories, text),
    with the same exact counts in the report; the carried memories are neither read nor
    scored when the state has their marks, and scored once from a state without them."""
    from cortexgraph.agents.common import to_jsonable
    from cortexgraph.agents.decay_findings import DecayAnalyzerConfig
    from cortexgraph.agents.decision_key import pipeline_key
    from cortexgraph.storage.models import MemoryStatus

    store, twin = _ListingStore(), InMemoryStore()
    tracker, twin_tracker = InMemoryIssueTracker(), InMemoryIssueTracker()
    state = _store_after_new_saves(store, tracker, embedder)
    _store_after_new_saves(twin, twin_tracker, embedder)
    if not marks:
        del state["fading_marks"]
    assert _digests(store, tracker) == _digests(twin, twin_tracker)
    pipe = _pipeline(store, tracker, embedder)
    full = _pipeline(twin, twin_tracker, embedder)
    for p in (pipe, full):  # listing fewer than the level holds
        p.decay.config = DecayAnalyzerConfig(digest_max_lines=2)
    # as if the first run had listed as few too (another configuration makes a full run)
    state["config"] = pipeline_key(pipe)
    tracked = incremental.begin(pipe, state, NOW)
    assert pipe.scope is not None
    store.listed.clear()
    report = run_agents(pipe, now=NOW, scope=pipe.scope, agents=["decay"])
    twin_report = run_agents(full, now=NOW, agents=["decay"])
    decay = report.reports["decay"]
    assert decay.scanned <= len(pipe.scope.ids) and decay.carried  # the rest carried over
    assert (MemoryStatus.ACTIVE in store.listed) is not marks
    assert _digests(store, tracker) == _digests(twin, twin_tracker)  # as a full run lists them
    assert [n for _, _, n in decay.digests] == [
        n for _, _, n in twin_report.reports["decay"].digests
    ]
    assert to_jsonable(decay)["carried"] == len(decay.carried)  # not tens of thousands of ids
    after = incremental.state_after(pipe, tracked, report, NOW)
    assert set(decay.carried) <= set(after["fading"])
    text = {m.id: m.content for m in store.list()}
    twin_marks = {
        twin.get(f.memory_id).content: f.mark for f in twin_report.reports["decay"].findings
    }
    # What the next run is told of each fading memory is what a full run would say.
    assert {text[i]: mark for i, mark in after["fading_marks"].items()} == twin_marks


def test_crossing_memories_alone_leave_the_embedding_cache_unread(store, tracker, tmp_path):
    """Only time moved (memories crossed a decay bar, none changed): the cluster step compares
    nothing, so the cache's file (150 MB at 100k memories) is not read."""
    from fakes import HashingEmbedder

    from cortexgraph.storage.embeddings import EmbeddingCache

    _base(store)
    warm = EmbeddingCache(HashingEmbedder(), tmp_path)
    state = _first_run(store, tracker, warm)
    warm.save()
    cache = EmbeddingCache(HashingEmbedder(), tmp_path)  # the next run's process
    pipe = _pipeline(store, tracker, cache)
    incremental.begin(pipe, state, NOW)
    assert pipe.scope is not None and pipe.scope.crossing and not pipe.scope.changed
    report = run_agents(pipe, now=NOW, scope=pipe.scope)
    assert report.reports["cluster"].scanned == 0
    assert cache.hits == 0 and cache.embedded == 0
    assert cache._loaded is None  # the file was never read


def test_the_state_file_round_trips_and_a_broken_one_means_a_full_run(store, tracker, tmp_path):
    """The next run reads back exactly what this one left (fingerprints, crossing times, the
    fading list and its marks); a 1.x JSON state is still read; a torn or foreign file is no
    state at all."""
    import json

    from cortexgraph.agents.entity_standing import EntityStanding
    from cortexgraph.run_state import (
        OLD_STATE_FILE,
        STATE_FILE,
        load_run_state,
        save_run_state,
    )

    _base(store)
    state = _first_run(store, tracker, None)
    save_run_state(tmp_path, state)
    back = load_run_state(tmp_path)
    assert back is not None and back["now"] == state["now"]
    assert back["memories"] == state["memories"] and back["fading"] == state["fading"]
    assert back["fading_marks"] == state["fading_marks"] and state["fading_marks"]
    unmarked = sorted(state["fading"])[0]  # from a state read without marks: scored next run
    marks = {i: m for i, m in state["fading_marks"].items() if i != unmarked}
    save_run_state(tmp_path, {**state, "fading_marks": marks})
    assert load_run_state(tmp_path)["fading_marks"] == marks
    save_run_state(tmp_path, state)
    assert any(math.isinf(t) for _, t in back["memories"].values())  # "never crosses" kept
    pipe = _pipeline(store, tracker, None)
    incremental.begin(pipe, back, BEFORE + 60)
    assert pipe.scope is not None and pipe.scope.empty  # the same answer as from memory
    # The entities' standing the relations step judged by, a newline in a name included.
    assert back["entity_standing"] == state["entity_standing"]
    assert pipe.scope.standing == EntityStanding.from_state(state["entity_standing"])
    assert pipe.scope.standing is not None
    odd = {"too_common": ["line\nbreak", "zoë"], "rare": []}
    save_run_state(tmp_path, {**state, "entity_standing": odd})
    assert load_run_state(tmp_path)["entity_standing"] == odd
    save_run_state(tmp_path, {k: v for k, v in state.items() if k != "entity_standing"})
    assert load_run_state(tmp_path)["entity_standing"] is None  # a state from before: none
    save_run_state(tmp_path, state)

    (tmp_path / STATE_FILE).unlink()
    old = {"version": 1, "now": BEFORE, "memories": {"a": [1, None]}, "fading": ["a"]}
    (tmp_path / OLD_STATE_FILE).write_text(json.dumps(old))
    assert load_run_state(tmp_path) == old
    save_run_state(tmp_path, state)
    assert not (tmp_path / OLD_STATE_FILE).exists()

    # A version 2 state's fingerprints left out creation times and mentions: not read (the
    # next run is a full one, not one that takes every memory for changed).
    save_run_state(tmp_path, state)
    with np.load(tmp_path / STATE_FILE) as data:
        arrays = {k: data[k] for k in data.files}
    np.savez(tmp_path / STATE_FILE, **{**arrays, "version": np.array(2)})
    assert load_run_state(tmp_path) is None

    (tmp_path / STATE_FILE).write_bytes((tmp_path / STATE_FILE).read_bytes()[:200])
    assert load_run_state(tmp_path) is None


def test_what_others_write_during_a_run_is_still_changed_for_the_next(store, tracker, embedder):
    """A save or a touch made beside the run (another tool call in the MCP server, another
    process) is not the run's: the next run still looks at it, while what the run wrote itself
    (its merge) is not counted again."""
    state = _store_after_new_saves(store, tracker, embedder)
    used = next(m for m in store.list() if m.content == "We deploy on Tuesdays.")

    def beside() -> None:
        store.save("saved beside the run", now=NOW)
        store.touch(used.id, now=NOW)

    pipe = _pipeline(store, tracker, embedder)
    with store.recording_writes() as writes:
        tracked = incremental.begin(pipe, state, NOW)
        report = run_agents(pipe, now=NOW, scope=pipe.scope)
        other = threading.Thread(target=beside)
        other.start()
        other.join()
        after = incremental.state_after(pipe, tracked, report, NOW, writes)
    assert report.reports["merge"].outcomes  # the run wrote something of its own

    nxt = _pipeline(store, tracker, embedder)
    incremental.begin(nxt, after, NOW + 60)
    assert nxt.scope is not None
    assert {store.get(i).content for i in nxt.scope.changed} == {
        "saved beside the run",
        "We deploy on Tuesdays.",
    }


def test_a_store_records_only_this_threads_writes(store):
    first = store.save("before the log", now=NOW)
    with store.recording_writes() as log:
        mine = store.save("mine", now=NOW)
        store.touch(first.id, now=NOW)
        other = threading.Thread(target=lambda: store.save("another thread's", now=NOW))
        other.start()
        other.join()
        store.delete(mine.id)
    assert log.written == {mine.id, first.id} and log.created == {mine.id}
    store.save("after the log", now=NOW)
    assert log.written == {mine.id, first.id}
