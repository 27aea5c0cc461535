"""The PostToolUse/PostToolUseFailure hook end to end: stdin JSON in, additionalContext out."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from monitor_sessions import session

from cortexgraph.hooks import post_tool_use_monitor as hook

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(tmp_path, monkeypatch):
    for key in list(__import__("os").environ):
        if key.startswith("CORTEXGRAPH_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("CORTEXGRAPH_STORAGE_PATH", str(tmp_path / "stm"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "shop"
    project.mkdir()
    (project / "CLAUDE.md").write_text(
        "# Rules\n## CI\n- Always run the tests locally before you push; CI is not a test "
        "runner.\n## Style\n- Keep functions short.\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    return tmp_path


def payload(raw: dict, sid: str = "sess-1") -> str:
    data = {
        "session_id": sid,
        "cwd": "/x",
        "tool_name": raw["tool"],
        "tool_input": raw.get("input", {}),
    }
    if "error" in raw:
        data.update(hook_event_name="PostToolUseFailure", error=raw["error"])
    else:
        data.update(hook_event_name="PostToolUse", tool_response=raw.get("response"))
    return json.dumps(data)


def run(raw: str, now: float) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = hook.run(io.StringIO(raw), out, err, now=now)
    return rc, out.getvalue(), err.getvalue()


def test_ci_loop_through_the_hook_quotes_the_users_rule(env):
    from monitor_sessions import SESSIONS

    calls = session(SESSIONS / "loop-ci-push-loop.json")["calls"]
    outputs = []
    ts = 1_750_000_000.0
    for raw in calls:
        ts += raw["dt"]
        rc, out, err = run(payload(raw), ts)
        assert rc == 0 and err == ""
        outputs.append(json.loads(out) if out else None)
    assert outputs[:5] == [None] * 5
    warn, loop = outputs[5], outputs[6]
    assert warn["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert loop["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    text = loop["hookSpecificOutput"]["additionalContext"]
    assert set(loop) == {"hookSpecificOutput"}
    assert "loop detected" in text and "Always run the tests locally" in text
    assert "project CLAUDE.md › Rules › CI" in text and "report_outcome" in text
    log = env / "stm" / "monitor" / "sessions" / "sess-1.jsonl"
    assert len(log.read_text().splitlines()) == len(calls)


def test_quiet_session_through_the_hook_prints_nothing(env):
    from monitor_sessions import SESSIONS

    ts = 1_750_000_000.0
    for raw in session(SESSIONS / "quiet-test-fix-changing-errors.json")["calls"]:
        ts += raw["dt"]
        assert run(payload(raw, "q"), ts) == (0, "", "")


def test_bad_input_fails_open(env):
    rc, out, err = run("not json", 1.0)
    assert (rc, out) == (0, "") and "skipped" in err
    rc, out, err = run(json.dumps({"hook_event_name": "Stop"}), 1.0)
    assert (rc, out) == (0, "") and "got event 'Stop'" in err


def test_can_be_switched_off(env, monkeypatch):
    monkeypatch.setenv("CORTEXGRAPH_BEHAVIOR_MONITOR", "false")
    assert run(payload({"tool": "Bash", "input": {"command": "x"}}), 1.0) == (0, "", "")
    assert not (env / "stm" / "monitor").exists()


def test_hook_process_does_not_import_torch(env, tmp_path):
    code = (
        "import sys, io, json; from cortexgraph.hooks import post_tool_use_monitor as h; "
        "h.run(io.StringIO(sys.argv[1]), io.StringIO(), sys.stderr); "
        "print(json.dumps(sorted(m for m in ('torch', 'sentence_transformers', 'spacy', "
        "'prefect', 'mcp') if m in sys.modules)))"
    )
    import os

    raw = payload({"tool": "Bash", "input": {"command": "ls"}, "response": {"stdout": "a"}})
    done = subprocess.run(
        [sys.executable, "-c", code, raw],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
