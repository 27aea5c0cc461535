"""Recorded sessions shared by the behaviour-monitor tests (a uniquely named module, so it
can be imported from any test file without colliding with other areas' conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cortexgraph.activation.monitor.replay import load_session

SESSIONS = Path(__file__).parent / "sessions"
LOOP_SESSIONS = sorted(SESSIONS.glob("loop-*.json"))
QUIET_SESSIONS = sorted(SESSIONS.glob("quiet-*.json"))
ERR = "E   ValueError: invalid literal for int() with base 10: 'abc'"


def session(path: Path) -> dict:
    return load_session(path)


async def error_loop(client: Any, rounds: int = 3) -> list[dict[str, Any]]:
    """The repeated-error loop through the MCP tools: each round a failing command, then an edit.
    Returns what each failing call answered (its alert, once the loop is seen)."""
    answers = []
    for i in range(rounds):
        failed = await client.call_tool(
            "record_tool_call",
            {
                "session_id": "chat-1",
                "tool_name": "Bash",
                "tool_input": {"command": "python -m app.parse data.csv"},
                "error": ERR,
                "context": "project:proj",
            },
        )
        assert not failed.is_error, failed.content[0].text
        answers.append(json.loads(failed.content[0].text))
        await client.call_tool(
            "record_tool_call",
            {
                "session_id": "chat-1",
                "tool_name": "Edit",
                "tool_input": {
                    "file_path": "app/parse.py",
                    "old_string": "int(x)",
                    "new_string": f"int(x.strip()) # {i}",
                },
            },
        )
    return answers
