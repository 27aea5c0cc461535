"""Behaviour monitor: catch an assistant stuck in a loop, remind it of the user's own rules,
learn which reminders help. Pure logic; the Claude Code hook and MCP tools wire it up. Its
learning ledger is a store of its own under ``<storage>/monitor/ledger`` (``ledger_store``).

    from cortexgraph.activation.monitor import Monitor, SessionLog, load_pattern_set, make_call
    monitor = Monitor(load_pattern_set())
    obs = monitor.observe(SessionLog(storage / "monitor", session_id), make_call(...), "project:x")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cortexgraph.storage.lazy_names import lazy_names

if TYPE_CHECKING:
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

# Names load on first use (PEP 562): a shell that opens the user's store needs only
# ``ledger_store`` (isolate_monitor_records), not the detectors, patterns and engine.
_LAZY = {
    "ToolCall": "cortexgraph.activation.monitor.calls",
    "error_signature": "cortexgraph.activation.monitor.calls",
    "make_call": "cortexgraph.activation.monitor.calls",
    "normalize_text": "cortexgraph.activation.monitor.calls",
    "LOOP": "cortexgraph.activation.monitor.detectors",
    "WARNING": "cortexgraph.activation.monitor.detectors",
    "Detection": "cortexgraph.activation.monitor.detectors",
    "detect": "cortexgraph.activation.monitor.detectors",
    "Directive": "cortexgraph.activation.monitor.directives",
    "DirectiveMatch": "cortexgraph.activation.monitor.directives",
    "claude_md_files": "cortexgraph.activation.monitor.directives",
    "load_directives": "cortexgraph.activation.monitor.directives",
    "match_directives": "cortexgraph.activation.monitor.directives",
    "parse_directives": "cortexgraph.activation.monitor.directives",
    "Monitor": "cortexgraph.activation.monitor.engine",
    "MonitorConfig": "cortexgraph.activation.monitor.engine",
    "Observation": "cortexgraph.activation.monitor.engine",
    "MonitorError": "cortexgraph.activation.monitor.errors",
    "PatternConfigError": "cortexgraph.activation.monitor.errors",
    "BehaviorLedger": "cortexgraph.activation.monitor.learning",
    "InterventionStats": "cortexgraph.activation.monitor.learning",
    "IsolationReport": "cortexgraph.activation.monitor.ledger_store",
    "isolate_monitor_records": "cortexgraph.activation.monitor.ledger_store",
    "open_ledger": "cortexgraph.activation.monitor.ledger_store",
    "open_ledger_store": "cortexgraph.activation.monitor.ledger_store",
    "load_pattern_set": "cortexgraph.activation.monitor.pattern_files",
    "load_patterns": "cortexgraph.activation.monitor.pattern_files",
    "PatternSet": "cortexgraph.activation.monitor.patterns",
    "PatternSpec": "cortexgraph.activation.monitor.patterns",
    "Reminder": "cortexgraph.activation.monitor.render",
    "render_reminder": "cortexgraph.activation.monitor.render",
    "SessionLog": "cortexgraph.activation.monitor.session_log",
    "active_sessions": "cortexgraph.activation.monitor.session_log",
}


__getattr__ = lazy_names(__name__, _LAZY)


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
