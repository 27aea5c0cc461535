"""Replaying a recorded session (JSON: calls with time offsets) through a monitor.

Recorded sessions are how the detectors are tested and benchmarked: each call is
``{"dt": seconds since the previous call, "tool", "input", "response" | "error"}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortexgraph.activation.monitor.calls import make_call
from cortexgraph.activation.monitor.engine import Monitor, Observation
from cortexgraph.activation.monitor.session_log import SessionLog

START_TS = 1_750_000_000.0


@dataclass(frozen=True, slots=True)
class Replay:
    name: str
    expect: str  # "loop" | "quiet"
    expected_patterns: tuple[str, ...]
    observations: tuple[Observation, ...]

    @property
    def alerts(self) -> list[Observation]:
        return [o for o in self.observations if o.alert is not None]

    @property
    def fired(self) -> set[str]:
        """Patterns that produced a loop-stage detection anywhere in the session."""
        return {d.pattern_id for o in self.observations for d in o.detections if d.stage == "loop"}


def load_session(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def replay(
    session: Mapping[str, Any],
    monitor: Monitor,
    directory: Path,
    context: str = "replay",
    start: float = START_TS,
) -> Replay:
    """Feed every call of ``session`` to ``monitor`` with a session log under ``directory``."""
    log = SessionLog(directory, str(session.get("name", "session")))
    ts = start
    out = []
    for raw in session["calls"]:
        ts += float(raw.get("dt", 10))
        call = make_call(
            raw["tool"], raw.get("input") or {}, raw.get("response"), ts=ts, error=raw.get("error")
        )
        out.append(monitor.observe(log, call, context))
    return Replay(
        str(session.get("name")),
        str(session.get("expect")),
        tuple(session.get("expected_patterns", ())),
        tuple(out),
    )


__all__ = ["START_TS", "Replay", "load_session", "replay"]
