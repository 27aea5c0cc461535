"""Pattern declarations: what a behaviour-monitor pattern is once parsed.

A pattern names a detector and its settings (``Trigger``), the reminders it may give
(``Intervention``) and where it applies; pattern_parsing.py checks a declaration field by field,
pattern_files.py reads the shipped ``patterns.yaml`` and the user's own files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

FAILURE_TEXT = re.compile(r"fail|error|✗|❌|exit (?:code|status) [1-9]", re.I)


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


__all__ = [
    "FAILURE_TEXT",
    "Intervention",
    "PatternSet",
    "PatternSpec",
    "StepMatcher",
    "Trigger",
]
