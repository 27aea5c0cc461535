"""The monitor's MCP tools and resources through the SDK's in-process client."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp import Client
from monitor_sessions import error_loop

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_server"))
from mcp_helpers import error_text, make_settings, payload

from cortexgraph.mcp_server.app import build_server


def test_record_report_query_request_and_resources(tmp_path, project):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as c:
            results = await error_loop(c)
            report = payload(
                await c.call_tool(
                    "report_outcome",
                    {
                        "pattern_id": "repeated-error",
                        "intervention_id": "root-cause",
                        "worked": True,
                        "notes": "read the CSV header handling",
                    },
                )
            )
            history = payload(
                await c.call_tool(
                    "query_pattern_history",
                    {"signature": "ValueError: invalid literal for int() with base 10: 'xyz'"},
                )
            )
            request = payload(
                await c.call_tool(
                    "request_intervention",
                    {"pattern_id": "repeated-error", "context": "project:proj"},
                )
            )
            bad = await c.call_tool(
                "report_outcome", {"pattern_id": "nope", "intervention_id": "x", "worked": True}
            )
            res = {}
            for uri in (
                "behavior://patterns/all",
                "behavior://patterns/repeated-error",
                "behavior://alerts/active",
                "behavior://directives/all",
            ):
                r = await c.read_resource(uri)
                res[uri] = json.loads(r.contents[0].text)
            return results, report, history, request, error_text(bad), res

    results, report, history, request, bad, res = anyio.run(go)
    assert [r["alert"] is not None for r in results] == [False, False, True]
    assert "find the root cause" in results[2]["reminder"]
    assert report["context"] == "project:proj"
    [eff] = [e for e in report["effectiveness"] if e["intervention_id"] == "root-cause"]
    assert (eff["shown"], eff["worked"]) == (1, 1)
    [h] = history["patterns"]
    assert h["pattern_id"] == "repeated-error" and h["occurrences"][0]["count"] == 1
    assert request["intervention_id"] == "root-cause" and "1/1 worked" in request["chosen_because"]
    assert request["directive"]["text"].startswith("When the same error repeats")
    assert "no behaviour pattern 'nope'" in bad
    assert {p["id"] for p in res["behavior://patterns/all"]} >= {"repeated-error", "ci-push-loop"}
    assert res["behavior://patterns/repeated-error"]["effectiveness"][0]["worked"] == 1
    assert res["behavior://alerts/active"][0]["pattern_id"] == "repeated-error"
    assert res["behavior://directives/all"][0]["section"] == "Debugging"


def test_a_session_log_held_by_another_process_is_a_storage_error(tmp_path, project):
    """record_tool_call while another process holds the session's log answered "MonitorError:
    session log ... is locked by another process", an internal class name; it is a storage
    error (the files cannot be used now), said as the MCP edge says those."""
    from filelock import FileLock

    from cortexgraph.activation.monitor.session_log import SessionLog

    log = SessionLog(tmp_path / "stm" / "monitor", "s-held")
    log.path.parent.mkdir(parents=True)
    args = {"session_id": "s-held", "tool_name": "Bash", "tool_input": {"command": "ls"}}

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as c:
            with FileLock(str(log.path.with_name(log.path.stem + ".lock"))):
                return await c.call_tool("record_tool_call", args)

    text = error_text(anyio.run(go))
    assert "MonitorError" not in text
    assert "Storage error: session log" in text and "locked by another process" in text
