"""Helpers shared by the hook tests: the output contract as Claude Code checks it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_790_000_000  # fixed clock for in-process tests
# Top-level keys Claude Code accepts in a hook's JSON output.
KNOWN_TOP_LEVEL = {
    "continue",
    "stopReason",
    "suppressOutput",
    "systemMessage",
    "decision",
    "reason",
    "hookSpecificOutput",
}


@dataclass(frozen=True)
class HookRun:
    rc: int
    stdout: str
    stderr: str

    @property
    def output(self) -> dict[str, Any] | None:
        return json.loads(self.stdout) if self.stdout.strip() else None


def context_of(run: HookRun, event: str) -> str:
    """The additionalContext of a run, after checking the output's exact shape."""
    assert run.rc == 0, run.stderr
    out = run.output
    assert out is not None, f"expected context, got nothing (stderr: {run.stderr})"
    assert set(out) == {"hookSpecificOutput"}, out.keys()
    assert set(out) <= KNOWN_TOP_LEVEL
    spec = out["hookSpecificOutput"]
    assert set(spec) == {"hookEventName", "additionalContext"}
    assert spec["hookEventName"] == event
    assert isinstance(spec["additionalContext"], str) and spec["additionalContext"]
    return spec["additionalContext"]


def assert_silent(run: HookRun) -> None:
    assert run.rc == 0, run.stderr
    assert run.stdout == "", run.stdout


AUTH_DECISION = (
    "We decided to use OAuth2 with PKCE for authentication in the web app; sessions expire "
    "after 12 hours."
)
