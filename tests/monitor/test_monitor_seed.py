"""The behaviour-monitor seed (004) through the SDK's in-process MCP client: the spec's context
object on query_pattern_history / request_intervention, its behavior://alerts/current address,
the pattern library's effectiveness scores and a pattern's history."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from monitor_sessions import error_loop

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_server"))
from mcp_helpers import error_text, make_settings, payload

from cortexgraph.mcp_server.app import build_server

GO_PATTERN = """patterns:
  - id: go-vet-loop
    name: go vet loop
    description: The same go vet failure keeps coming back.
    trigger: {detector: repeated_error, threshold: 9}
    window: {calls: 20, seconds: 1800}
    context_filters: {language: [go]}
    interventions:
      - id: read-vet
        next_step: Read the vet message for {target}.
"""


@pytest.fixture
def project(project, tmp_path):
    """The monitor tests' project (conftest), with a Go pattern in the store's library."""
    (tmp_path / "stm" / "monitor").mkdir(parents=True)
    (tmp_path / "stm" / "monitor" / "patterns.yaml").write_text(GO_PATTERN, encoding="utf-8")
    return project


def test_the_specs_context_object_alerts_current_and_library_scores(tmp_path, project):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as c:
            await error_loop(c)
            report = {"pattern_id": "repeated-error", "intervention_id": "root-cause"}
            await c.call_tool("report_outcome", {**report, "worked": True, "notes": "fixed"})
            err = "ValueError: invalid literal for int() with base 10: 'xyz'"
            calls = {
                "history": ("query_pattern_history", {"signature": err}),
                "history_python": (
                    "query_pattern_history",
                    {"signature": err, "context": {"language": "python"}},
                ),
                "python": (
                    "request_intervention",
                    {
                        "pattern_id": "repeated-error",
                        "context": {"project": "proj", "language": "python"},
                    },
                ),
                "go_for_python": (
                    "request_intervention",
                    {"pattern_id": "go-vet-loop", "context": {"language": ["python"]}},
                ),
                "go_for_go": (
                    "request_intervention",
                    {
                        "pattern_id": "go-vet-loop",
                        "context": {"repo_type": "library", "language": "go"},
                    },
                ),
            }
            out = {}
            for name, (tool, args) in calls.items():
                out[name] = payload(await c.call_tool(tool, args))
            args = {"signature": "repeated-error", "context": {"project": "proj"}}
            out["by_project"] = payload(await c.call_tool("query_pattern_history", args))
            args = {"signature": "repeated-error", "context": {"project": "other"}}
            out["elsewhere"] = payload(await c.call_tool("query_pattern_history", args))
            bad = await c.call_tool(
                "query_pattern_history",
                {"signature": "repeated-error", "context": {"tools": ["black"]}},
            )
            res = {}
            for uri in (
                "behavior://alerts/active",
                "behavior://alerts/current",
                "behavior://patterns/all",
                "behavior://patterns/repeated-error",
            ):
                res[uri] = json.loads((await c.read_resource(uri)).contents[0].text)
            return out, error_text(bad), res

    out, bad, res = anyio.run(go)
    assert [p["pattern_id"] for p in out["history"]["patterns"]] == ["repeated-error"]
    assert [p["pattern_id"] for p in out["history_python"]["patterns"]] == ["repeated-error"]
    assert out["history_python"]["profile"] == {"language": ["python"]}
    [mine] = out["by_project"]["patterns"]
    assert out["by_project"]["context"] == "project:proj"
    assert [o["context"] for o in mine["occurrences"]] == ["project:proj"]
    assert out["elsewhere"]["patterns"][0]["occurrences"] == []  # the name is applied
    python = out["python"]
    assert python["intervention_id"] == "root-cause" and "1/1 worked" in python["chosen_because"]
    assert python["applies_to_context"] is True
    assert out["go_for_python"]["applies_to_context"] is False  # context_filters: go only
    assert out["go_for_go"]["applies_to_context"] is True
    assert "context takes a name or an object with context, project, repo, repo_type" in bad
    alerts = res["behavior://alerts/active"]
    assert alerts and res["behavior://alerts/current"] == alerts
    library = {p["id"]: p for p in res["behavior://patterns/all"]}
    [score] = [
        e
        for e in library["repeated-error"]["effectiveness"]
        if e["intervention_id"] == "root-cause"
    ]
    assert (score["shown"], score["worked"], score["effectiveness"]) == (1, 1, 1.0)
    assert library["go-vet-loop"]["effectiveness"][0]["shown"] == 0
    one = res["behavior://patterns/repeated-error"]  # with the seed's "historical data"
    assert [(o["context"], o["count"]) for o in one["occurrences"]] == [("project:proj", 1)]


def test_an_oversized_context_object_is_refused_by_name(tmp_path, project):
    """The context object is free-form JSON: bounded by its size, refused with a message that
    says how big it was and the limit, for both look-ups."""

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as c:
            big = {"project": "shop", "language": "x" * 5000}
            return [
                await c.call_tool("query_pattern_history", {"signature": "E", "context": big}),
                await c.call_tool(
                    "request_intervention", {"pattern_id": "repeated-error", "context": big}
                ),
            ]

    for result in anyio.run(go):
        assert result.is_error
        assert "context is 5,0" in error_text(result) and "under 2,000" in error_text(result)
