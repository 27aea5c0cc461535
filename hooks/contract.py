"""The Claude Code hook contract: JSON on stdin, at most one JSON object on stdout, exit 0.

Only keys Claude Code knows are ever written (an unknown top-level key makes it reject the
whole output). Nothing to add means no output at all. Our own failures never block the user:
the hook exits 0 with the reason on stderr ("fail open").
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "PostToolUse")


class HookInputError(ValueError):
    """stdin was not the JSON object Claude Code sends."""


@dataclass(frozen=True, slots=True)
class HookInput:
    event: str
    session_id: str = ""
    transcript_path: str = ""
    cwd: str = ""
    prompt: str = ""
    source: str = ""  # SessionStart: startup | resume | clear | compact
    stop_hook_active: bool = False
    tool_name: str = ""
    tool_input: Mapping[str, Any] = field(default_factory=dict)
    tool_response: Any = None
    error: str = ""  # PostToolUseFailure: what went wrong

    @classmethod
    def parse(cls, raw: str, expected_event: str | tuple[str, ...]) -> HookInput:
        """Read stdin; ``expected_event`` names the event(s) this hook serves (first: default)."""
        allowed = (expected_event,) if isinstance(expected_event, str) else expected_event
        try:
            data = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            raise HookInputError(f"stdin is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise HookInputError("stdin must be a JSON object")
        event = data.get("hook_event_name") or allowed[0]
        if event not in allowed:
            raise HookInputError(f"this is the {'/'.join(allowed)} hook, got event {event!r}")

        def text(key: str) -> str:
            value = data.get(key)
            return value if isinstance(value, str) else ""

        tool_input = data.get("tool_input")
        return cls(
            event=event,
            session_id=text("session_id"),
            transcript_path=text("transcript_path"),
            cwd=text("cwd"),
            prompt=text("prompt"),
            source=text("source"),
            stop_hook_active=data.get("stop_hook_active") is True,
            tool_name=text("tool_name"),
            tool_input=tool_input if isinstance(tool_input, dict) else {},
            tool_response=data.get("tool_response"),
            error=text("error") or text("error_message"),
        )


def additional_context(event: str, text: str) -> dict[str, Any]:
    """Context for the model (SessionStart, UserPromptSubmit, PostToolUse)."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def block_stop(reason: str) -> dict[str, Any]:
    """Stop: Claude continues the turn with ``reason`` as its next instruction."""
    return {"decision": "block", "reason": reason}


Handler = Callable[[HookInput], "dict[str, Any] | None"]


def run_hook(
    event: str,
    handler: Handler,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Parse stdin, run ``handler``, print its output if any. Always returns 0 (fail open)."""
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    try:
        inp = HookInput.parse(stdin.read(), event)
        output = handler(inp)
    except Exception as exc:  # a hook must never block the user on our bug
        print(f"cortexgraph {event} hook skipped: {type(exc).__name__}: {exc}", file=stderr)
        return 0
    if output:
        stdout.write(json.dumps(output, ensure_ascii=False))
        stdout.write("\n")
        stdout.flush()
    return 0


__all__ = [
    "EVENTS",
    "HookInput",
    "HookInputError",
    "additional_context",
    "block_stop",
    "run_hook",
]
