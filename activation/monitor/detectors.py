"""Detectors: pure functions over a session's recent calls (oldest first, newest last).

Each looks only at windows that end at the newest call, so a pattern is reported when the call
that completes it arrives, not again for every later call. Each returns a ``Detection`` with a
stage: ``loop`` once the threshold is reached, ``warning`` one short of it (only for patterns
declared preventive), or nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cortexgraph.activation.monitor.calls import ToolCall, short_hash, similarity
from cortexgraph.activation.monitor.patterns import PatternSpec

LOOP, WARNING = "loop", "warning"
KNOWN = "known"  # an error that looped in an earlier session, seen again (engine, not here)


@dataclass(frozen=True, slots=True)
class Detection:
    pattern_id: str
    stage: str  # "loop" | "warning"
    count: int
    threshold: int
    signature: str  # what repeats (stable across the calls of one loop)
    tool: str
    target: str
    error: str  # the repeated error line, if any
    summary: str  # one sentence: the loop seen

    def to_json(self) -> dict[str, object]:
        return {
            "pattern_id": self.pattern_id,
            "stage": self.stage,
            "count": self.count,
            "threshold": self.threshold,
            "signature": self.signature,
            "tool": self.tool,
            "target": self.target,
            "error": self.error,
            "summary": self.summary,
        }


def window(calls: Sequence[ToolCall], spec: PatternSpec) -> list[ToolCall]:
    """The newest ``window_calls`` calls no older than ``window_seconds`` before the newest."""
    if not calls:
        return []
    recent = list(calls[-spec.window_calls :])
    start = recent[-1].ts - spec.window_seconds
    return [c for c in recent if c.ts >= start]


def _stage(spec: PatternSpec, count: int) -> str | None:
    threshold = spec.trigger.threshold
    if count >= threshold:
        return LOOP
    if spec.preventive and count == threshold - 1 and count >= 2:
        return WARNING
    return None


def _applies(spec: PatternSpec, call: ToolCall) -> bool:
    t = spec.trigger
    return (not t.tools or call.tool in t.tools) and call.tool not in t.ignore_tools


# A Python traceback's header, and the exception line its last line gives (pytest's "E   "
# prefix allowed): "ValueError: bad price", "requests.exceptions.ConnectionError: ...".
_TRACEBACK_HEADER = re.compile(r"^traceback \(most recent call last\):?$", re.I)
_EXCEPTION_LINE = re.compile(
    r"^(?:E\s+)?(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning|Fault)"
    r"(?::|$)"
)


def first_error(call: ToolCall) -> str:
    """The line that names the failure: a traceback's exception line (the last one, after
    chained ones), else the first error line that is not a traceback header."""
    lines = [ln for ln in call.excerpt.split(" | ") if ln]
    if not lines:
        return ""
    exceptions = [ln for ln in lines if _EXCEPTION_LINE.match(ln)]
    if exceptions:
        return exceptions[-1][:160]
    rest = [ln for ln in lines if not _TRACEBACK_HEADER.match(ln)]
    return (rest or lines)[0][:160]


def repeated_call(calls: Sequence[ToolCall], spec: PatternSpec) -> Detection | None:
    """The same tool, near-identical arguments and the same result, N times in the window."""
    win = window(calls, spec)
    last = win[-1] if win else None
    if last is None or not _applies(spec, last):
        return None
    toks = last.arg_tokens
    same = [
        c
        for c in win
        if c.tool == last.tool
        and c.outcome == last.outcome
        and similarity(c.arg_tokens, toks) >= spec.trigger.similarity
    ]
    stage = _stage(spec, len(same))
    if stage is None:
        return None
    what = f"{last.tool} on {last.target}" if last.target else last.tool
    return Detection(
        spec.id,
        stage,
        len(same),
        spec.trigger.threshold,
        f"{last.tool}:{short_hash(last.args)}",
        last.tool,
        last.target,
        first_error(last) if last.failed else "",
        f"{what} was called {len(same)} times in the last {len(win)} calls with "
        "near-identical arguments and the same result",
    )


def repeated_error(calls: Sequence[ToolCall], spec: PatternSpec) -> Detection | None:
    """The same normalised error signature N times in the window (any tools)."""
    win = window(calls, spec)
    last = win[-1] if win else None
    if last is None or not last.error_sig or not _applies(spec, last):
        return None
    same = [c for c in win if c.error_sig == last.error_sig]
    stage = _stage(spec, len(same))
    if stage is None:
        return None
    error = first_error(last)
    return Detection(
        spec.id,
        stage,
        len(same),
        spec.trigger.threshold,
        f"err:{last.error_sig}",
        last.tool,
        last.target,
        error,
        f'the same error came back {len(same)} times in the last {len(win)} calls: "{error}"',
    )


def sequence(calls: Sequence[ToolCall], spec: PatternSpec) -> Detection | None:
    """The declared steps in order (other calls may come between); ``reset_on`` restarts it."""
    steps, resets = spec.trigger.steps, spec.trigger.reset_on
    win = window(calls, spec)
    matched = 0
    advanced_by_last = False
    for i, c in enumerate(win):
        is_last = i == len(win) - 1
        if matched < len(steps) and steps[matched].matches(c.tool, c.args, c.excerpt, c.failed):
            matched += 1
            advanced_by_last = is_last
        elif any(r.matches(c.tool, c.args, c.excerpt, c.failed) for r in resets):
            matched = 0
            advanced_by_last = False
    if not advanced_by_last:
        return None
    stage = _stage(spec, matched)
    if stage is None:
        return None
    last = win[-1]
    return Detection(
        spec.id,
        stage,
        matched,
        len(steps),
        f"seq:{spec.id}",
        last.tool,
        last.target,
        first_error(last) if last.failed else "",
        f"{matched} of the {len(steps)} steps of '{spec.name}' just happened in "
        f"order: {spec.description}",
    )


def rapid_retry(calls: Sequence[ToolCall], spec: PatternSpec) -> Detection | None:
    """A failing call re-run unchanged, each time within ``max_gap_seconds`` of the last."""
    win = window(calls, spec)
    last = win[-1] if win else None
    if last is None or not last.failed or not _applies(spec, last):
        return None
    toks = last.arg_tokens
    chain = [last]
    for c in reversed(win[:-1]):
        if c.mutating:
            break  # a change between runs makes the next run a new attempt
        if c.tool != last.tool or similarity(c.arg_tokens, toks) < spec.trigger.similarity:
            continue
        if not c.failed or chain[-1].ts - c.ts > spec.trigger.max_gap_seconds:
            break
        chain.append(c)
    stage = _stage(spec, len(chain))
    if stage is None:
        return None
    return Detection(
        spec.id,
        stage,
        len(chain),
        spec.trigger.threshold,
        f"retry:{last.tool}:{short_hash(last.args)}",
        last.tool,
        last.target,
        first_error(last),
        f"{last.tool} on {last.target or 'the same input'} failed {len(chain)} "
        f"times in a row, each retry under {spec.trigger.max_gap_seconds:.0f} s "
        "after the last, with nothing changed in between",
    )


DETECTORS: dict[str, Callable[[Sequence[ToolCall], PatternSpec], Detection | None]] = {
    "repeated_call": repeated_call,
    "repeated_error": repeated_error,
    "sequence": sequence,
    "rapid_retry": rapid_retry,
}


def detect(calls: Sequence[ToolCall], specs: Sequence[PatternSpec]) -> list[Detection]:
    """Every pattern that the newest call completes (loops first, then warnings)."""
    found = [d for s in specs if (d := DETECTORS[s.trigger.detector](calls, s)) is not None]
    return sorted(found, key=lambda d: d.stage != LOOP)


__all__ = ["DETECTORS", "KNOWN", "LOOP", "WARNING", "Detection", "detect", "first_error", "window"]
