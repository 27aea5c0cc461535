"""The reminder injected into the model's context: the loop seen, the user's rule, a next step."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cortexgraph.activation.monitor.detectors import KNOWN, LOOP, Detection
from cortexgraph.activation.monitor.directives import DirectiveMatch
from cortexgraph.activation.monitor.patterns import Intervention, PatternSpec

MAX_CHARS = 1000


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return ""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True, slots=True)
class Reminder:
    pattern_id: str
    intervention_id: str
    directive_id: str | None
    text: str


# With no error text at hand (a reminder asked for by pattern id), a quoted placeholder would
# read 'The error ""': say "the error" instead.
_QUOTED_ERROR = re.compile(r"(?:[Tt]he\s+error\s+)?\"\{error\}\"")
DEFAULT_OUTCOME = "the next call gets a different result, or you have a reason to stop and ask."


def _fill(template: str, detection: Detection) -> str:
    if not detection.error.strip():
        template = _QUOTED_ERROR.sub("the error", template).replace("{error}", "the error")
        template = template[:1].upper() + template[1:]
    values = _Blank(
        tool=detection.tool or "the tool",
        target=detection.target or "the same input",
        count=str(detection.count),
        error=_clip(detection.error, 120),
    )
    return template.format_map(values)


def next_step_text(intervention: Intervention, detection: Detection) -> str:
    return _fill(intervention.next_step, detection)


def expected_outcome_text(intervention: Intervention, detection: Detection) -> str:
    return _fill(intervention.expected_outcome or DEFAULT_OUTCOME, detection)


def render_reminder(
    detection: Detection,
    spec: PatternSpec,
    intervention: Intervention,
    match: DirectiveMatch | None,
    max_chars: int = MAX_CHARS,
) -> Reminder:
    """A few short lines; the quoted rule and the seen loop are clipped to fit ``max_chars``."""
    if detection.stage == LOOP:
        head = f"cortexgraph behaviour monitor: loop detected ({spec.name})."
    elif detection.stage == KNOWN:
        head = (
            f"cortexgraph behaviour monitor: known problem ({spec.name}); this error looped "
            "in an earlier session, so act before it loops again."
        )
    else:
        head = (
            f"cortexgraph behaviour monitor: early warning ({spec.name}); one more repeat "
            "and this is a loop."
        )
    lines = [head, "Seen: " + _clip(detection.summary, 260) + "."]
    if match is not None:
        d = match.directive
        where = f"{d.scope} CLAUDE.md" + (f" › {d.section}" if d.section else "")
        lines.append(f'Your rule ({_clip(where, 80)}): "{_clip(d.text, 300)}"')
    lines.append("Next step: " + _clip(next_step_text(intervention, detection), 360))
    lines.append("Expected outcome: " + _clip(expected_outcome_text(intervention, detection), 200))
    lines.append(
        f"Afterwards, call report_outcome(pattern_id='{spec.id}', "
        f"intervention_id='{intervention.id}', worked=true|false)."
    )
    text = "\n".join(lines)
    return Reminder(
        spec.id,
        intervention.id,
        match.directive.id if match else None,
        text if len(text) <= max_chars else text[: max_chars - 1] + "…",
    )


__all__ = ["MAX_CHARS", "Reminder", "expected_outcome_text", "next_step_text", "render_reminder"]
