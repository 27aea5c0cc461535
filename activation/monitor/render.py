"""The reminder injected into the model's context: the loop seen, the user's rule, a next step."""

from __future__ import annotations

from dataclasses import dataclass

from activation.monitor.detectors import LOOP, Detection
from activation.monitor.directives import DirectiveMatch
from activation.monitor.patterns import Intervention, PatternSpec

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


def next_step_text(intervention: Intervention, detection: Detection) -> str:
    values = _Blank(tool=detection.tool or "the tool", target=detection.target or "the same input",
                    count=str(detection.count), error=_clip(detection.error, 120))  # fmt: skip
    return intervention.next_step.format_map(values)


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
    else:
        head = (f"cortexgraph behaviour monitor: early warning ({spec.name}); one more repeat "
                "and this is a loop.")  # fmt: skip
    lines = [head, "Seen: " + _clip(detection.summary, 260) + "."]
    if match is not None:
        d = match.directive
        where = f"{d.scope} CLAUDE.md" + (f" › {d.section}" if d.section else "")
        lines.append(f'Your rule ({_clip(where, 80)}): "{_clip(d.text, 300)}"')
    lines.append("Next step: " + _clip(next_step_text(intervention, detection), 360))
    lines.append(f"Afterwards, call report_outcome(pattern_id='{spec.id}', "
                 f"intervention_id='{intervention.id}', worked=true|false).")  # fmt: skip
    text = "\n".join(lines)
    return Reminder(spec.id, intervention.id, match.directive.id if match else None,
                    text if len(text) <= max_chars else text[: max_chars - 1] + "…")  # fmt: skip


__all__ = ["MAX_CHARS", "Reminder", "next_step_text", "render_reminder"]
