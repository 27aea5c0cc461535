"""PostToolUse / PostToolUseFailure: the behaviour monitor's hook (every tool, every call).

Claude Code fires PostToolUse after a call that succeeded and PostToolUseFailure (with an
``error`` text) after one that failed; this one entry point takes both. It appends the call to
the session's bounded log beside the store, runs the detectors and, when a loop (or, for
preventive patterns, the step before one) is seen, answers with ``additionalContext``: the loop,
the user's own CLAUDE.md rule, a next step. The common path imports no torch and opens no
store; the store (learning) and CLAUDE.md are read only when there is something to say.

Off switch: CORTEXGRAPH_BEHAVIOR_MONITOR=false.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from cortexgraph.activation.monitor import (
    BehaviorLedger,
    Monitor,
    SessionLog,
    claude_md_files,
    load_directives,
    load_pattern_set,
    make_call,
)
from cortexgraph.hooks.contract import HookInput, additional_context
from cortexgraph.hooks.runtime import HookRuntime, load_runtime

EVENTS = ("PostToolUse", "PostToolUseFailure")
USER_PATTERNS = "patterns.yaml"  # in <storage>/monitor/
PROJECT_PATTERNS = Path(".claude") / "cortexgraph-patterns.yaml"


def parse(raw: str) -> tuple[HookInput, str]:
    """The hook input and the failure text ('' after a successful call)."""
    hook_input = HookInput.parse(raw, EVENTS)
    failed = hook_input.event == "PostToolUseFailure"
    return hook_input, hook_input.error or ("the tool call failed" if failed else "")


def monitor_dir(runtime: HookRuntime) -> Path:
    return runtime.storage_path / "monitor"


def build_monitor(runtime: HookRuntime) -> Monitor:
    base = monitor_dir(runtime)
    extra = [base / USER_PATTERNS]
    if runtime.project_dir is not None:
        extra.append(runtime.project_dir / PROJECT_PATTERNS)
    patterns = load_pattern_set(extra, cache=base / "patterns.cache.json")

    def directives() -> list[Any]:
        return load_directives(claude_md_files(runtime.project_dir, Path.home()), Path.home())

    def ledger() -> BehaviorLedger:
        # Only when an alert or an outcome is recorded; the monitor's own store, never the user's.
        from cortexgraph.activation.monitor import open_ledger

        return open_ledger(runtime.storage_path)

    return Monitor(patterns, directives=directives, ledger=ledger)


def context_of(runtime: HookRuntime) -> str:
    return f"project:{runtime.project_name}" if runtime.project_name else "global"


def handle(
    inp: HookInput, error: str = "", now: float | None = None, stderr: TextIO | None = None
) -> dict[str, Any] | None:
    if not inp.tool_name:
        return None
    runtime = load_runtime(inp)
    monitor = build_monitor(runtime)
    call = make_call(
        inp.tool_name,
        inp.tool_input,
        inp.tool_response,
        ts=time.time() if now is None else now,
        error=error or None,
    )
    session = SessionLog(monitor_dir(runtime), inp.session_id or "no-session")
    from cortexgraph.activation.monitor.project_profile import project_profile

    obs = monitor.observe(
        session, call, context_of(runtime), profile=project_profile(runtime.project_dir)
    )
    for note in obs.notes:
        print(f"cortexgraph behaviour monitor: {note}", file=stderr or sys.stderr)
    if obs.reminder is None:
        return None
    return additional_context(inp.event, obs.reminder.text)


def run(
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    now: float | None = None,
) -> int:
    """Read the event, maybe print one JSON object. Always 0: never block the user on our bug."""
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    if os.environ.get("CORTEXGRAPH_BEHAVIOR_MONITOR", "true").strip().lower() in {
        "0",
        "false",
        "no",
        "off",
    }:
        return 0
    try:
        inp, error = parse(stdin.read())
        output = handle(inp, error, now, stderr)
    except Exception as exc:  # fail open
        print(f"cortexgraph behaviour monitor skipped: {type(exc).__name__}: {exc}", file=stderr)
        return 0
    if output:
        stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
        stdout.flush()
    return 0


def main() -> int:
    return run()


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["EVENTS", "build_monitor", "context_of", "handle", "main", "parse", "run"]
