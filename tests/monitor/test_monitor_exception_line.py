"""The monitor quotes a Python traceback's exception line, not its header, and an error that
looped as a rapid retry (not only as "same error") is warned about in the next session.

Through the MCP tools (record_tool_call, query_pattern_history) with the SDK's client.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_server"))
from mcp_helpers import make_settings, payload

from cortexgraph.mcp_server.app import build_server

TRACEBACK = """Traceback (most recent call last):
  File "/home/me/shop/app.py", line 41, in <module>
    main()
  File "/home/me/shop/pricing.py", line 12, in main
    raise ValueError(f"bad price {price}")
ValueError: bad price -3"""


def test_a_traceback_loop_quotes_the_exception_line_and_history_finds_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as c:
            outs = [
                payload(
                    await c.call_tool(
                        "record_tool_call",
                        {
                            "session_id": "s1",
                            "tool_name": "Bash",
                            "tool_input": {"command": f"python -m shop.app --try {i}"},
                            "error": TRACEBACK,
                        },
                    )
                )
                for i in range(3)
            ]
            history = payload(
                await c.call_tool("query_pattern_history", {"signature": "ValueError: bad price 7"})
            )
            return outs, history

    outs, history = anyio.run(go)
    alert = outs[-1]["alert"]
    assert alert and alert["pattern_id"] == "repeated-error"
    assert alert["error"] == "ValueError: bad price -3"
    assert "ValueError: bad price -3" in outs[-1]["reminder"]
    assert "Traceback (most recent call last)" not in outs[-1]["reminder"]
    assert "repeated-error" in {p["pattern_id"] for p in history["patterns"]}, history


def test_a_rapid_retry_loop_warns_the_next_session_on_first_sight(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    # the same command failing three times within a minute, each time with another message:
    # a rapid-retry loop that is not a "same error" loop
    errors = [
        "curl: (7) Failed to connect to api.internal port 443: Connection refused",
        "curl: (6) Could not resolve host: api.internal",
        "curl: (28) Operation timed out after 5000 milliseconds",
    ]

    def call(session: str, error: str) -> dict:
        return {
            "session_id": session,
            "tool_name": "Bash",
            "tool_input": {"command": "curl -sf https://api.internal/health"},
            "error": error,
        }

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as c:
            first = [
                payload(await c.call_tool("record_tool_call", call("monday", e))) for e in errors
            ]
            later = payload(await c.call_tool("record_tool_call", call("tuesday", errors[-1])))
            return first, later

    first, later = anyio.run(go)
    assert first[-1]["alert"]["pattern_id"] == "rapid-retry"
    assert first[-1]["alert"]["stage"] == "loop"
    assert later["alert"] and later["alert"]["stage"] == "known", later
    assert later["alert"]["pattern_id"] == "rapid-retry"
    assert "earlier session" in later["reminder"] and "timed out" in later["reminder"]
