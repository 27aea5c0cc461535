"""Parsing a pattern declaration: every field checked, so a typo in a user's file is reported
with the pattern id and the key, not silently ignored."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cortexgraph.activation.monitor.errors import PatternConfigError
from cortexgraph.activation.monitor.patterns import Intervention, PatternSpec, StepMatcher, Trigger

DETECTORS = ("repeated_call", "repeated_error", "sequence", "rapid_retry")
OUTCOMES = ("any", "failure", "success")
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_TRIGGER_KEYS = {
    "detector",
    "threshold",
    "similarity",
    "ignore_tools",
    "tools",
    "steps",
    "reset_on",
    "max_gap_seconds",
}
_PATTERN_KEYS = {
    "id",
    "name",
    "description",
    "trigger",
    "window",
    "preventive",
    "keywords",
    "interventions",
    "intervention",
    "enabled",
    "priority",
    "context_filters",
}
# What a pattern may be limited to (activation.monitor.project_profile detects both).
FILTER_KEYS = ("repo_type", "language")


def _fail(pid: str, message: str) -> PatternConfigError:
    return PatternConfigError(f"pattern {pid!r}: {message}")


def _regex(pid: str, value: Any, what: str) -> re.Pattern[str]:
    if not isinstance(value, str) or not value:
        raise _fail(pid, f"{what} must be a non-empty regular expression")
    try:
        return re.compile(value, re.I)
    except re.error as exc:
        raise _fail(pid, f"{what} {value!r} is not a valid regex: {exc}") from exc


def _step(pid: str, raw: Any, what: str) -> StepMatcher:
    if not isinstance(raw, Mapping) or "tool" not in raw:
        raise _fail(pid, f"each {what} entry needs at least a 'tool' regex")
    unknown = set(raw) - {"tool", "input", "output", "outcome"}
    if unknown:
        raise _fail(pid, f"unknown {what} key(s) {sorted(unknown)}")
    outcome = raw.get("outcome", "any")
    if outcome not in OUTCOMES:
        raise _fail(pid, f"{what} outcome must be one of {OUTCOMES}, got {outcome!r}")
    tool = _regex(pid, raw["tool"], f"{what} tool")
    tool = re.compile(tool.pattern)  # tool names are case-sensitive
    return StepMatcher(
        tool=tool,
        input=_regex(pid, raw["input"], f"{what} input") if "input" in raw else None,
        output=_regex(pid, raw["output"], f"{what} output") if "output" in raw else None,
        outcome=outcome,
    )


def _number(pid: str, value: Any, what: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise _fail(pid, f"{what} must be a number from {low} to {high}, got {value!r}")
    return float(value)


def _names(pid: str, value: Any, what: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(pid, f"{what} must be a list of tool names")
    return frozenset(value)


def parse_pattern(raw: Any, source: str = "shipped") -> PatternSpec:
    """One pattern from its YAML mapping; raises PatternConfigError saying what is wrong."""
    if not isinstance(raw, Mapping):
        raise PatternConfigError(f"{source}: each pattern must be a mapping")
    pid = raw.get("id")
    if not isinstance(pid, str) or not _ID.match(pid):
        raise PatternConfigError(
            f"{source}: pattern id {pid!r} must be lower-case letters, "
            "digits, '-' or '_' (at most 63)"
        )
    unknown = set(raw) - _PATTERN_KEYS
    if unknown:
        raise _fail(pid, f"unknown key(s) {sorted(unknown)}; known: {sorted(_PATTERN_KEYS)}")
    trig = raw.get("trigger")
    if not isinstance(trig, Mapping) or trig.get("detector") not in DETECTORS:
        raise _fail(pid, f"trigger.detector must be one of {DETECTORS}")
    unknown = set(trig) - _TRIGGER_KEYS
    if unknown:
        raise _fail(pid, f"unknown trigger key(s) {sorted(unknown)}")
    detector = trig["detector"]
    steps = tuple(_step(pid, s, "steps") for s in trig.get("steps") or ())
    if detector == "sequence" and len(steps) < 2:
        raise _fail(pid, "a sequence trigger needs at least two steps")
    default_threshold = len(steps) if detector == "sequence" else 3
    threshold = int(
        _number(pid, trig.get("threshold", default_threshold), "trigger.threshold", 2, 100)
    )
    if detector == "sequence" and threshold != len(steps):
        raise _fail(pid, "a sequence's threshold is its number of steps; leave it out")
    trigger = Trigger(
        detector=detector,
        threshold=threshold,
        similarity=_number(pid, trig.get("similarity", 0.9), "trigger.similarity", 0.0, 1.0),
        tools=_names(pid, trig.get("tools"), "trigger.tools"),
        ignore_tools=_names(pid, trig.get("ignore_tools"), "trigger.ignore_tools"),
        steps=steps,
        reset_on=tuple(_step(pid, s, "reset_on") for s in trig.get("reset_on") or ()),
        max_gap_seconds=_number(pid, trig.get("max_gap_seconds", 60), "max_gap_seconds", 1, 86_400),
    )
    window = raw.get("window") or {}
    if not isinstance(window, Mapping) or set(window) - {"calls", "seconds"}:
        raise _fail(pid, "window must be a mapping with 'calls' and/or 'seconds'")
    calls = int(_number(pid, window.get("calls", 20), "window.calls", 2, 500))
    if calls < threshold:
        raise _fail(pid, f"window.calls ({calls}) is smaller than the threshold ({threshold})")
    items = raw.get("interventions")
    if items is None and raw.get("intervention") is not None:
        items = [raw["intervention"]]
    if not isinstance(items, list) or not items:
        raise _fail(pid, "needs at least one intervention with an id and a next_step")
    interventions: list[Intervention] = []
    for item in items:
        if isinstance(item, str):
            item = {"id": "default", "next_step": item}
        if (
            not isinstance(item, Mapping)
            or not isinstance(item.get("id"), str)
            or not _ID.match(item["id"])
            or not isinstance(item.get("next_step"), str)
        ):
            raise _fail(pid, "each intervention needs an id (lower-case) and a next_step text")
        if any(i.id == item["id"] for i in interventions):
            raise _fail(pid, f"intervention id {item['id']!r} is used twice")
        outcome = item.get("expected_outcome") or ""
        if not isinstance(outcome, str):
            raise _fail(pid, f"intervention {item['id']!r}: expected_outcome must be text")
        interventions.append(
            Intervention(item["id"], " ".join(item["next_step"].split()), " ".join(outcome.split()))
        )
    keywords = raw.get("keywords") or []
    if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
        raise _fail(pid, "keywords must be a list of words")
    return PatternSpec(
        id=pid,
        name=str(raw.get("name") or pid),
        description=" ".join(str(raw.get("description") or "").split()),
        trigger=trigger,
        window_calls=calls,
        window_seconds=_number(pid, window.get("seconds", 3600), "window.seconds", 1, 604_800),
        preventive=bool(raw.get("preventive", False)),
        keywords=tuple(keywords),
        interventions=tuple(interventions),
        priority=int(_number(pid, raw.get("priority", 0), "priority", -100, 100)),
        source=source,
        context_filters=_filters(pid, raw.get("context_filters")),
    )


def _filters(pid: str, raw: Any) -> tuple[tuple[str, frozenset[str]], ...]:
    """``context_filters: {repo_type: [service], language: [python, go]}`` (a value or a list)."""
    if raw is None:
        return ()
    if not isinstance(raw, Mapping) or set(raw) - set(FILTER_KEYS):
        raise _fail(pid, f"context_filters must be a mapping with keys from {FILTER_KEYS}")
    out = []
    for key in FILTER_KEYS:
        if key not in raw:
            continue
        values = [raw[key]] if isinstance(raw[key], str) else raw[key]
        if (
            not isinstance(values, list)
            or not values
            or not all(isinstance(v, str) and v for v in values)
        ):
            raise _fail(pid, f"context_filters.{key} must be a name or a list of names")
        out.append((key, frozenset(v.lower() for v in values)))
    return tuple(out)


def parse_patterns(data: Any, source: str) -> tuple[list[PatternSpec], set[str]]:
    """(patterns, ids disabled) from one file's parsed YAML."""
    if data is None:
        return [], set()
    items = data.get("patterns") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise PatternConfigError(f"{source}: expected a 'patterns:' list")
    specs: list[PatternSpec] = []
    disabled: set[str] = set()
    for raw in items:
        if (
            isinstance(raw, Mapping)
            and raw.get("enabled") is False
            and set(raw) <= {"id", "enabled"}
        ):
            disabled.add(str(raw.get("id")))
            continue
        spec = parse_pattern(raw, source)
        if isinstance(raw, Mapping) and raw.get("enabled") is False:
            disabled.add(spec.id)
        else:
            specs.append(spec)
    return specs, disabled


__all__ = ["DETECTORS", "FILTER_KEYS", "OUTCOMES", "parse_pattern", "parse_patterns"]
