"""Pattern declarations: the shipped ``patterns.yaml`` plus the user's own files.

A pattern names a detector and its settings; parsing checks every field so a typo in a user's
file is reported with the pattern id and the key, not silently ignored. A user pattern with a
shipped id replaces it; ``enabled: false`` turns one off.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cortexgraph.activation.monitor.errors import PatternConfigError

SHIPPED = Path(__file__).with_name("patterns.yaml")
DETECTORS = ("repeated_call", "repeated_error", "sequence", "rapid_retry")
OUTCOMES = ("any", "failure", "success")
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
FAILURE_TEXT = re.compile(r"fail|error|✗|❌|exit (?:code|status) [1-9]", re.I)
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


@dataclass(frozen=True, slots=True)
class StepMatcher:
    """One step of a sequence: tool-name and argument regexes, and the outcome it must have."""

    tool: re.Pattern[str]
    input: re.Pattern[str] | None = None
    output: re.Pattern[str] | None = None
    outcome: str = "any"

    def matches(self, tool: str, args: str, excerpt: str, failed: bool) -> bool:
        if not self.tool.fullmatch(tool):
            return False
        if self.input is not None and not self.input.search(args):
            return False
        if self.output is not None and not self.output.search(excerpt):
            return False
        if self.outcome == "any":
            return True
        is_failure = failed or bool(FAILURE_TEXT.search(excerpt))
        return is_failure == (self.outcome == "failure")


@dataclass(frozen=True, slots=True)
class Trigger:
    detector: str
    threshold: int
    similarity: float = 0.9
    tools: frozenset[str] = frozenset()  # empty: every tool
    ignore_tools: frozenset[str] = frozenset()
    steps: tuple[StepMatcher, ...] = ()
    reset_on: tuple[StepMatcher, ...] = ()
    max_gap_seconds: float = 60.0


@dataclass(frozen=True, slots=True)
class Intervention:
    id: str
    next_step: str
    expected_outcome: str = ""  # the reminder's "Expected outcome:" line


@dataclass(frozen=True, slots=True)
class PatternSpec:
    id: str
    name: str
    description: str
    trigger: Trigger
    window_calls: int
    window_seconds: float
    preventive: bool
    keywords: tuple[str, ...]
    interventions: tuple[Intervention, ...]
    priority: int = 0
    source: str = "shipped"
    # ((key, allowed values), ...): the pattern applies only where the project matches; an
    # unknown repo type or language never filters a pattern out.
    context_filters: tuple[tuple[str, frozenset[str]], ...] = ()

    def applies_to(self, profile: Mapping[str, frozenset[str]]) -> bool:
        return all(
            not profile.get(key) or bool(profile[key] & allowed)
            for key, allowed in self.context_filters
        )

    def intervention(self, intervention_id: str) -> Intervention | None:
        return next((i for i in self.interventions if i.id == intervention_id), None)

    def to_json(self) -> dict[str, Any]:
        t = self.trigger
        trigger: dict[str, Any] = {"detector": t.detector, "threshold": t.threshold}
        if t.detector in ("repeated_call", "rapid_retry"):
            trigger["similarity"] = t.similarity
        if t.detector == "rapid_retry":
            trigger["max_gap_seconds"] = t.max_gap_seconds
        if t.tools:
            trigger["tools"] = sorted(t.tools)
        if t.ignore_tools:
            trigger["ignore_tools"] = sorted(t.ignore_tools)
        if t.steps:
            trigger["steps"] = [_step_json(s) for s in t.steps]
        if t.reset_on:
            trigger["reset_on"] = [_step_json(s) for s in t.reset_on]
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "trigger": trigger,
            "window": {"calls": self.window_calls, "seconds": self.window_seconds},
            "preventive": self.preventive,
            "keywords": list(self.keywords),
            "interventions": [
                {
                    "id": i.id,
                    "next_step": i.next_step,
                    **({"expected_outcome": i.expected_outcome} if i.expected_outcome else {}),
                }
                for i in self.interventions
            ],
            "priority": self.priority,
            "source": self.source,
            **(
                {"context_filters": {k: sorted(v) for k, v in self.context_filters}}
                if self.context_filters
                else {}
            ),
        }


def _step_json(step: StepMatcher) -> dict[str, str]:
    out = {"tool": step.tool.pattern, "outcome": step.outcome}
    if step.input is not None:
        out["input"] = step.input.pattern
    if step.output is not None:
        out["output"] = step.output.pattern
    return out


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


def _read_yaml(path: Path) -> Any:
    import yaml  # only when patterns are (re)parsed; the hook usually reads the JSON cache

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    except yaml.YAMLError as exc:
        raise PatternConfigError(f"{path}: not valid YAML: {exc}") from exc


def load_patterns(extra: Sequence[Path] = (), *, shipped: Path = SHIPPED) -> list[PatternSpec]:
    """Shipped patterns, then each existing file of ``extra`` (later files win by id)."""
    by_id: dict[str, PatternSpec] = {}
    for path in (shipped, *extra):
        if path != shipped and not path.is_file():
            continue
        specs, disabled = parse_patterns(_read_yaml(path), str(path))
        for pid in disabled:
            by_id.pop(pid, None)
        for spec in specs:
            by_id[spec.id] = spec
    return sorted(by_id.values(), key=lambda s: (-s.priority, s.id))


def patterns_to_json(specs: Iterable[PatternSpec]) -> str:
    return json.dumps([s.to_json() for s in specs], ensure_ascii=False)


def patterns_from_json(text: str) -> list[PatternSpec]:
    """Patterns from ``patterns_to_json`` output (the hook's cache, no YAML import)."""
    out = []
    for raw in json.loads(text):
        source = raw.pop("source", "shipped")
        out.append(parse_pattern(raw, source))
    return out


@dataclass(frozen=True, slots=True)
class PatternSet:
    patterns: tuple[PatternSpec, ...]
    sources: tuple[str, ...] = field(default=())

    def get(self, pattern_id: str) -> PatternSpec | None:
        return next((p for p in self.patterns if p.id == pattern_id), None)

    @property
    def max_window(self) -> int:
        return max((p.window_calls for p in self.patterns), default=0)

    def for_project(self, profile: Mapping[str, frozenset[str]] | None) -> PatternSet:
        """The patterns whose ``context_filters`` match the project (all, with no profile)."""
        if not profile:
            return self
        kept = tuple(p for p in self.patterns if p.applies_to(profile))
        return self if len(kept) == len(self.patterns) else PatternSet(kept, self.sources)


def load_pattern_set(extra: Sequence[Path] = (), cache: Path | None = None) -> PatternSet:
    """``load_patterns`` with an optional JSON cache keyed by the files' sizes and mtimes."""
    paths = [SHIPPED, *(p for p in extra if p.is_file())]
    key = ";".join(f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in paths)
    if cache is not None:
        try:
            data = json.loads(cache.read_text(encoding="utf-8"))
            if data.get("key") == key:
                return PatternSet(
                    tuple(patterns_from_json(data["patterns"])), tuple(map(str, paths))
                )
        except (OSError, ValueError, KeyError, TypeError, PatternConfigError):
            pass
    specs = load_patterns([p for p in paths if p != SHIPPED])
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(".tmp")
            tmp.write_text(json.dumps({"key": key, "patterns": patterns_to_json(specs)}), "utf-8")
            tmp.replace(cache)
        except OSError:
            pass  # a cache we cannot write only costs a YAML parse next time
    return PatternSet(tuple(specs), tuple(map(str, paths)))


__all__ = [
    "DETECTORS",
    "FILTER_KEYS",
    "SHIPPED",
    "Intervention",
    "PatternSet",
    "PatternSpec",
    "StepMatcher",
    "Trigger",
    "load_pattern_set",
    "load_patterns",
    "parse_pattern",
    "parse_patterns",
]
