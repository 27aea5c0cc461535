"""Behaviour monitor: catch an assistant stuck in a loop, remind it of the user's own rules,
learn which reminders help. Pure logic; the Claude Code hook and MCP tools wire it up.

    from activation.monitor import Monitor, SessionLog, load_pattern_set, make_call
    monitor = Monitor(load_pattern_set())
    obs = monitor.observe(SessionLog(storage / "monitor", session_id), make_call(...), "project:x")
"""

from __future__ import annotations

from activation.monitor.calls import ToolCall, error_signature, make_call, normalize_text
from activation.monitor.detectors import LOOP, WARNING, Detection, detect
from activation.monitor.directives import (
    Directive,
    DirectiveMatch,
    claude_md_files,
    load_directives,
    match_directives,
    parse_directives,
)
from activation.monitor.engine import Monitor, MonitorConfig, Observation
from activation.monitor.errors import MonitorError, PatternConfigError
from activation.monitor.learning import BehaviorLedger, InterventionStats
from activation.monitor.patterns import (
    PatternSet,
    PatternSpec,
    load_pattern_set,
    load_patterns,
)
from activation.monitor.render import Reminder, render_reminder
from activation.monitor.session_log import SessionLog, active_sessions

__all__ = [
    "LOOP",
    "WARNING",
    "BehaviorLedger",
    "Detection",
    "Directive",
    "DirectiveMatch",
    "InterventionStats",
    "Monitor",
    "MonitorConfig",
    "MonitorError",
    "Observation",
    "PatternConfigError",
    "PatternSet",
    "PatternSpec",
    "Reminder",
    "SessionLog",
    "ToolCall",
    "active_sessions",
    "claude_md_files",
    "detect",
    "error_signature",
    "load_directives",
    "load_pattern_set",
    "load_patterns",
    "make_call",
    "match_directives",
    "normalize_text",
    "parse_directives",
    "render_reminder",
]
