"""Detectors on recorded sessions: every loop session triggers, no quiet session does."""

from __future__ import annotations

import dataclasses

import pytest
from monitor_sessions import LOOP_SESSIONS, QUIET_SESSIONS, session

from cortexgraph.activation.monitor import Monitor, make_call
from cortexgraph.activation.monitor.detectors import detect, rapid_retry, repeated_call, sequence
from cortexgraph.activation.monitor.replay import replay


@pytest.mark.parametrize("path", LOOP_SESSIONS, ids=lambda p: p.stem)
def test_loop_sessions_trigger_their_patterns(path, monitor, tmp_path):
    data = session(path)
    result = replay(data, monitor, tmp_path)
    assert set(data["expected_patterns"]) <= result.fired
    assert result.alerts, "a loop must reach the model as a reminder"
    assert result.alerts[-1].reminder.text.startswith("cortexgraph behaviour monitor")


@pytest.mark.parametrize("path", QUIET_SESSIONS, ids=lambda p: p.stem)
def test_legitimate_iteration_stays_quiet(path, monitor, tmp_path):
    result = replay(session(path), monitor, tmp_path)
    assert result.fired == set()
    assert result.alerts == [], [o.alert for o in result.alerts]


def test_session_sets_are_not_trivial():
    assert len(LOOP_SESSIONS) >= 8 and len(QUIET_SESSIONS) >= 10


def test_ci_loop_warns_before_the_second_ci_failure(monitor, tmp_path):
    result = replay(
        session(LOOP_SESSIONS[0].with_name("loop-ci-push-loop.json")), monitor, tmp_path
    )
    stages = [(i, o.alert.stage) for i, o in enumerate(result.observations) if o.alert]
    # the warning lands on the second push (step 5 of 6), the loop on the second CI failure
    assert stages == [(5, "warning"), (6, "loop")]
    assert "one more repeat" in result.observations[5].reminder.text


def test_a_local_test_run_resets_the_ci_sequence(patterns):
    spec = patterns.get("ci-push-loop")
    calls = [
        make_call("Edit", {"file_path": "a.py", "old_string": "a", "new_string": "b"}, None, ts=1),
        make_call("Bash", {"command": "git push"}, {"stdout": "ok"}, ts=2),
        make_call("Bash", {"command": "gh run watch"}, None, ts=3, error="X test failed"),
        make_call("Edit", {"file_path": "a.py", "old_string": "b", "new_string": "c"}, None, ts=4),
        make_call("Bash", {"command": "pytest -q"}, {"stdout": "3 passed"}, ts=5),
        make_call("Bash", {"command": "git push"}, {"stdout": "ok"}, ts=6),
    ]
    assert sequence(calls, spec) is None
    without_local_run = [c for c in calls if "pytest" not in c.args]
    found = sequence(without_local_run, spec)
    assert found is not None and found.stage == "warning" and found.count == 5


def _bash(cmd, ts, error=None, out="same"):
    return make_call(
        "Bash", {"command": cmd}, None if error else {"stdout": out}, ts=ts, error=error
    )


def test_thresholds_and_windows_are_configurable(patterns):
    spec = patterns.get("repeated-call")
    calls = [_bash("git status", t) for t in (0, 10, 20)]
    assert repeated_call(calls, spec).stage == "warning"
    assert repeated_call(calls, dataclasses.replace(spec, preventive=False)) is None
    lower = dataclasses.replace(spec, trigger=dataclasses.replace(spec.trigger, threshold=3))
    assert repeated_call(calls, lower).stage == "loop"
    short = dataclasses.replace(spec, window_seconds=15)
    assert repeated_call(calls, short) is None  # only two calls within 15 s


def test_same_command_with_new_output_is_not_a_repeat(patterns):
    spec = patterns.get("repeated-call")
    calls = [
        _bash("kubectl get pods", t, out=f"state {s}")
        for t, s in ((0, "Pending"), (20, "Creating"), (40, "Running"), (60, "Ready"))
    ]
    assert repeated_call(calls, spec) is None


def test_rapid_retry_needs_short_gaps_and_no_change_in_between(patterns):
    spec = patterns.get("rapid-retry")
    fast = [_bash("curl api", t, error="curl: (7) Failed to connect") for t in (0, 20, 40)]
    assert rapid_retry(fast, spec).stage == "loop"
    slow = [_bash("curl api", t, error="curl: (7) Failed to connect") for t in (0, 100, 200)]
    assert rapid_retry(slow, spec) is None
    edit = make_call("Edit", {"file_path": "c", "old_string": "1", "new_string": "2"}, None, ts=30)
    assert rapid_retry([*fast[:2], edit, fast[2]], spec) is None


def test_only_patterns_completed_by_the_newest_call_are_reported(patterns):
    err = "E   ValueError: bad config"
    calls = [_bash("pytest", t, error=err) for t in (0, 10, 20)]
    assert any(d.pattern_id == "repeated-error" for d in detect(calls, patterns.patterns))
    later = [*calls, _bash("ls", 30)]
    assert not any(d.pattern_id == "repeated-error" for d in detect(later, patterns.patterns))


def test_an_alert_is_not_repeated_within_the_cooldown(patterns, tmp_path):
    from cortexgraph.activation.monitor import SessionLog

    m = Monitor(patterns)
    log = SessionLog(tmp_path, "s")
    shown = []
    for i in range(14):
        obs = m.observe(log, _bash("pytest", i * 10, error="E   KeyError: 'user'"), "ctx")
        shown.append(obs.alert.pattern_id if obs.alert else None)
    # three patterns fire on this loop; the model gets one reminder, then quiet for 5 calls
    assert shown[2] is not None and shown[3:7] == [None] * 4
    alerts = [p for p in shown if p]
    assert len(alerts) == len(set(alerts)), "the same pattern again within the cooldown"
