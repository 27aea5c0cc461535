"""Behaviour monitor: catch an assistant stuck in a loop, remind it of the user's own rules,
learn which reminders help. Pure logic; the Claude Code hook and MCP tools wire it up. Its
learning ledger is a store of its own under ``<storage>/monitor/ledger`` (``ledger_store``).

    from cortexgraph.activation.monitor import Monitor, SessionLog, load_pattern_set, make_call
    monitor = Monitor(load_pattern_set())
    obs = monitor.observe(SessionLog(storage / "monitor", session_id), make_call(...), "project:x")
"""

from __future__ import annotations

from cortexgraph.activation.monitor.calls import (
    ToolCall,
    error_signature,
    make_call,
    normalize_text,
)
from cortexgraph.activation.monitor.detectors import LOOP, WARNING, Detection, detect
from cortexgraph.activation.monitor.directives import (
    Directive,
    DirectiveMatch,
    claude_md_files,
    load_directives,
    match_directives,
    parse_directives,
)
from cortexgraph.activation.monitor.engine import Monitor, MonitorConfig, Observation
from cortexgraph.activation.monitor.errors import MonitorError, PatternConfigError
from cortexgraph.activation.monitor.learning import BehaviorLedger, InterventionStats
from cortexgraph.activation.monitor.ledger_store import (
    IsolationReport,
    isolate_monitor_records,
    open_ledger,
    open_ledger_store,
)
from cortexgraph.activation.monitor.pattern_files import load_pattern_set, load_patterns
from cortexgraph.activation.monitor.patterns import PatternSet, PatternSpec
from cortexgraph.activation.monitor.render import Reminder, render_reminder
from cortexgraph.activation.monitor.session_log import SessionLog, active_sessions

__all__ = [
    "LOOP",
    "WARNING",
    "BehaviorLedger",
    "Detection",
    "Directive",
    "DirectiveMatch",
    "InterventionStats",
    "IsolationReport",
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
    "isolate_monitor_records",
    "load_directives",
    "load_pattern_set",
    "load_patterns",
    "make_call",
    "match_directives",
    "normalize_text",
    "open_ledger",
    "open_ledger_store",
    "parse_directives",
    "render_reminder",
]
