"""The learning loop: occurrences and showings in the store, outcomes inferred or reported,
the best intervention chosen from history per context."""

from __future__ import annotations

from cortexgraph.activation.monitor import BehaviorLedger, Monitor, SessionLog, make_call
from cortexgraph.activation.monitor.learning import OCCURS_IN, REMEDIED_BY
from cortexgraph.storage import InMemoryStore, open_store

ERR = "E   KeyError: 'user_id'\nFAILED tests/test_api.py::test_get"


def _fail(ts):
    return make_call("Bash", {"command": "pytest tests/test_api.py"}, None, ts=ts, error=ERR)


def _other(ts, i):
    return make_call("Read", {"file_path": f"/p/src/mod{i}.py"}, f"content {i}", ts=ts)


def _monitor(patterns, store):
    return Monitor(patterns, ledger=lambda: BehaviorLedger(store))


def test_an_alert_is_stored_as_memories_and_relations(patterns, tmp_path):
    store = open_store(tmp_path / "stm")
    m = _monitor(patterns, store)
    log = SessionLog(tmp_path / "monitor", "s1")
    obs = [m.observe(log, _fail(100 + 10 * i), "project:api") for i in range(3)]
    assert obs[2].alert and obs[2].alert.pattern_id == "rapid-retry"
    again = open_store(tmp_path / "stm")  # what another process sees
    pattern = again.get("bm.pattern.rapid-retry")
    assert "behavior-monitor" in pattern.tags and pattern.is_core
    rels = again.relations("bm.pattern.rapid-retry")
    occ = [r for r in rels if r.metadata["edge"] == OCCURS_IN]
    shown = [r for r in rels if r.metadata["edge"] == REMEDIED_BY]
    assert len(occ) == 1 and occ[0].metadata["count"] == 1
    assert again.get(occ[0].to_memory_id).meta.extra["context"] == "project:api"
    assert len(shown) == 1 and shown[0].metadata["outcome"] is None
    assert shown[0].to_memory_id == "bm.intervention.rapid-retry.diagnose-first"


def test_loop_stopping_within_k_calls_is_inferred_as_worked(patterns, tmp_path):
    store = InMemoryStore()
    m = _monitor(patterns, store)
    log = SessionLog(tmp_path, "s1")
    for i in range(3):
        m.observe(log, _fail(100 + 10 * i), "ctx")
    settled = [s for i in range(5) for s in m.observe(log, _other(200 + i, i), "ctx").settled]
    assert [(s.pattern_id, s.worked) for s in settled] == [("rapid-retry", True)]
    [stats] = BehaviorLedger(store).effectiveness(patterns.get("rapid-retry"), "ctx")
    assert (stats.shown, stats.worked, stats.failed) == (1, 1, 0)
    assert BehaviorLedger(store).showings("rapid-retry")[0].metadata["inferred"] is True


def test_loop_coming_back_is_inferred_as_failed(patterns, tmp_path):
    store = InMemoryStore()
    m = _monitor(patterns, store)
    log = SessionLog(tmp_path, "s1")
    for i in range(4):
        m.observe(log, _fail(100 + 10 * i), "ctx")
    stats = BehaviorLedger(store).effectiveness(patterns.get("rapid-retry"), "ctx")
    assert (stats[0].shown, stats[0].failed) == (1, 1)


def test_reported_outcome_overrides_inferred_but_not_the_reverse(patterns):
    store = InMemoryStore()
    ledger = BehaviorLedger(store)
    spec = patterns.get("repeated-error")
    rel = ledger.record_shown(spec, "root-cause", "ctx", now=1)
    ledger.record_outcome(spec, "root-cause", "ctx", True, inferred=True, relation_id=rel.id, now=2)
    ledger.record_outcome(spec, "root-cause", None, False, notes="still failing", now=3)
    [r] = ledger.showings("repeated-error")
    assert r.metadata["outcome"] == "failed" and r.metadata["notes"] == "still failing"
    ledger.record_outcome(spec, "root-cause", "ctx", True, inferred=True, relation_id=rel.id)
    assert ledger.showings("repeated-error")[0].metadata["outcome"] == "failed"


def test_best_intervention_follows_history_per_context(patterns):
    store = InMemoryStore()
    ledger = BehaviorLedger(store)
    spec = patterns.get("repeated-error")
    first, second = (i.id for i in spec.interventions)
    assert ledger.best_intervention(spec, "project:a")[0] == first  # no history: declared order
    for worked in (False, False):
        ledger.record_outcome(spec, first, "project:a", worked)
    ledger.record_outcome(spec, second, "project:a", True)
    assert ledger.best_intervention(spec, "project:a")[0] == second
    # another project with its own history keeps its own winner
    ledger.record_outcome(spec, first, "project:b", True)
    assert ledger.best_intervention(spec, "project:b")[0] == first
    # a context never seen falls back to all contexts: second 1/1 beats first 1/3
    assert ledger.best_intervention(spec, "project:new")[0] == second


def test_the_monitor_shows_the_intervention_that_worked_before(patterns, tmp_path):
    store = InMemoryStore()
    spec = patterns.get("rapid-retry")
    ledger = BehaviorLedger(store)
    ledger.record_outcome(spec, "diagnose-first", "ctx", False)
    # only one intervention declared: it is still used, with its history
    m = _monitor(patterns, store)
    log = SessionLog(tmp_path, "s1")
    obs = [m.observe(log, _fail(100 + 10 * i), "ctx") for i in range(3)]
    assert obs[-1].reminder.intervention_id == "diagnose-first"
    spec2 = patterns.get("repeated-error")
    ledger.record_outcome(spec2, "root-cause", "ctx", False)
    ledger.record_outcome(spec2, "revert-and-rethink", "ctx", True)
    m2 = _monitor(patterns, store)
    log2 = SessionLog(tmp_path, "s2")
    edit = {"file_path": "/p/api.py", "old_string": "a", "new_string": "b"}
    seen = []
    for i in range(3):
        seen.append(m2.observe(log2, _fail(500 + 100 * i), "ctx"))
        m2.observe(
            log2, make_call("Edit", {**edit, "new_string": str(i)}, None, ts=550 + 100 * i), "ctx"
        )
    assert seen[-1].alert.pattern_id == "repeated-error"
    assert seen[-1].reminder.intervention_id == "revert-and-rethink"


def test_an_unusable_store_still_gives_the_reminder(patterns, tmp_path):
    def broken():
        raise OSError("disk full")

    m = Monitor(patterns, ledger=broken)
    log = SessionLog(tmp_path, "s1")
    obs = [m.observe(log, _fail(100 + 10 * i), "ctx") for i in range(3)]
    assert obs[-1].reminder is not None
    assert any("learning store unavailable" in n for n in obs[-1].notes)
