"""Monitor behaviour as the spec times and words it: context filters by project, a known error
warned on first sight in a new session, the "Expected outcome" line, no empty quoted error.

Through the real surfaces: the hook as a process (python -m cortexgraph.hooks post-tool-use-monitor)
and the MCP tools through the SDK's client.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from child_env import child_env, hook_process
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_server"))
from mcp_helpers import make_settings, payload

from cortexgraph.activation.monitor import load_pattern_set
from cortexgraph.activation.monitor.project_profile import project_profile
from cortexgraph.mcp_server.app import build_server

ROOT = Path(__file__).resolve().parents[2]
ERR = "ModuleNotFoundError: No module named 'shop.payments'"
GO_ONLY = """patterns:
  - id: go-vet-loop
    name: go vet again
    description: The same go vet error.
    trigger: {detector: repeated_error, threshold: 2}
    window: {calls: 10}
    context_filters: {language: [go]}
    interventions:
      - id: read-vet
        next_step: Read the vet message for {target}.
        expected_outcome: go vet passes.
"""


def hook(tmp_path: Path, project: Path, session: str, error: str, command: str) -> str:
    env = child_env(
        CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "stm"),
        HOME=str(tmp_path / "home"),
        CLAUDE_PROJECT_DIR=str(project),
        PYTHONPATH=str(ROOT),
    )
    body = {
        "session_id": session,
        "cwd": str(project),
        "tool_name": "Bash",
        "hook_event_name": "PostToolUseFailure",
        "error": error,
        "tool_input": {"command": command},
    }
    proc = hook_process("post-tool-use-monitor", body, env)
    assert proc.returncode == 0 and "skipped" not in proc.stderr, proc.stderr
    out = json.loads(proc.stdout) if proc.stdout.strip() else None
    return out["hookSpecificOutput"]["additionalContext"] if out else ""


def test_profile_reads_language_and_repo_type_from_root_markers(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / "Dockerfile").write_text("FROM python\n")
    assert project_profile(tmp_path) == {
        "language": frozenset({"python"}),
        "repo_type": frozenset({"service"}),
    }
    (tmp_path / "Dockerfile").unlink()
    assert project_profile(tmp_path)["repo_type"] == {"library"}
    spec = next(p for p in load_pattern_set().patterns if p.id == "repeated-error")
    assert spec.applies_to(project_profile(tmp_path))  # unfiltered patterns apply everywhere


def test_context_filters_limit_a_pattern_to_matching_projects(tmp_path):
    (tmp_path / "stm" / "monitor").mkdir(parents=True)
    (tmp_path / "stm" / "monitor" / "patterns.yaml").write_text(GO_ONLY, encoding="utf-8")
    py, go = tmp_path / "py-app", tmp_path / "go-app"
    py.mkdir(), go.mkdir()
    (py / "pyproject.toml").write_text("[project]\nname='x'\n")
    (go / "go.mod").write_text("module example.com/x\n")
    vet = "./main.go:12:2: fmt.Printf format %d has arg s of wrong type string"
    for project, expect in ((py, False), (go, True)):
        texts = [
            hook(tmp_path, project, f"s-{project.name}", vet, "go vet ./...") for _ in range(2)
        ]
        assert ("go vet again" in texts[1]) is expect, texts
    assert "Expected outcome: go vet passes." in texts[1]


def test_a_known_error_warns_on_first_sight_in_a_new_session(tmp_path):
    project = tmp_path / "shop"
    project.mkdir()
    first = [
        hook(tmp_path, project, "monday", ERR, f"python -m shop.app --run {i}") for i in range(3)
    ]
    assert first[:2] == ["", ""] and "loop detected (Same error again)" in first[2]
    assert "Expected outcome: You can name the cause in one sentence" in first[2]
    later = hook(tmp_path, project, "tuesday", ERR, "python -m shop.app --run 9")
    assert "known problem (Same error again)" in later and "earlier session" in later
    assert "shop.payments" in later and "Expected outcome:" in later
    assert hook(tmp_path, project, "tuesday", ERR, "python -m shop.app --run 10") == ""
    other = hook(tmp_path, project, "wednesday", "KeyError: 'price'", "python -m shop.app")
    assert other == ""  # an error never seen looping: nothing on first sight


def test_request_intervention_without_an_error_never_quotes_an_empty_one(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as c:
            fresh = payload(
                await c.call_tool("request_intervention", {"pattern_id": "repeated-error"})
            )
            for i in range(3):
                await c.call_tool(
                    "record_tool_call",
                    {
                        "session_id": "s",
                        "tool_name": "Bash",
                        "tool_input": {"command": "pytest"},
                        "error": ERR,
                    },
                )
                await c.call_tool(
                    "record_tool_call",
                    {
                        "session_id": "s",
                        "tool_name": "Edit",
                        "tool_input": {
                            "file_path": "shop/app.py",
                            "old_string": "a",
                            "new_string": f"b{i}",
                        },
                    },
                )
            known = payload(
                await c.call_tool("request_intervention", {"pattern_id": "repeated-error"})
            )
            return fresh["reminder"], known["reminder"]

    fresh, known = anyio.run(go)
    assert '""' not in fresh and "The error is unchanged after 3 attempts" in fresh
    assert "Expected outcome:" in fresh
    assert "modulenotfounderror" in known.lower() and '""' not in known
