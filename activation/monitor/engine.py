"""The monitor: add a call to the session log, run the detectors, decide whether to speak.

Per call: append under the session lock, detect on the newest calls, settle interventions that
were waiting for an outcome (the loop came back: failed; ``outcome_after_calls`` calls passed
quietly: worked), and pick at most one alert that has not been shown recently. Only when an
alert is shown, or an outcome settled, are the directives read and the learning ledger opened
(both are passed in as factories, so the common call touches neither CLAUDE.md nor the store).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from cortexgraph.activation.monitor.calls import ToolCall
from cortexgraph.activation.monitor.detectors import KNOWN, LOOP, Detection, detect, first_error
from cortexgraph.activation.monitor.directives import Directive, DirectiveMatch, match_directives
from cortexgraph.activation.monitor.known_errors import KnownErrors
from cortexgraph.activation.monitor.learning import BehaviorLedger
from cortexgraph.activation.monitor.patterns import PatternSet, PatternSpec
from cortexgraph.activation.monitor.render import Reminder, render_reminder
from cortexgraph.activation.monitor.session_log import SessionLog
from cortexgraph.storage.models import new_id

log = logging.getLogger(__name__)

MAX_ALERTS_KEPT = 20
MAX_PENDING = 10


@dataclass(frozen=True, slots=True)
class MonitorConfig:
    cooldown_calls: int = 15  # the same alert is not repeated within this many calls
    # One loop often completes several patterns at once (same error, same call, fast retry):
    # after any alert, others wait this many calls, so the model gets one reminder, not three.
    min_gap_calls: int = 5
    outcome_after_calls: int = 5  # K: quiet this long after an intervention means it worked
    max_chars: int = 1000
    learn: bool = True
    # Context-triggered timing: an error that looped in an earlier session is flagged the
    # first time it shows up in a new one (known_errors.py).
    known_errors: bool = True
    max_errors_seen: int = 100  # signatures remembered per session for "first sight"


@dataclass(frozen=True, slots=True)
class SettledOutcome:
    pattern_id: str
    intervention_id: str
    worked: bool
    relation_id: str


@dataclass(frozen=True, slots=True)
class Observation:
    call: ToolCall
    detections: tuple[Detection, ...]
    reminder: Reminder | None = None
    alert: Detection | None = None
    settled: tuple[SettledOutcome, ...] = ()
    notes: tuple[str, ...] = field(default=())  # what degraded (ledger or directives unusable)

    def to_json(self) -> dict[str, Any]:
        return {
            "detections": [d.to_json() for d in self.detections],
            "alert": self.alert.to_json() if self.alert else None,
            "reminder": self.reminder.text if self.reminder else None,
            "intervention_id": self.reminder.intervention_id if self.reminder else None,
            "directive_id": self.reminder.directive_id if self.reminder else None,
            "settled_outcomes": [
                {
                    "pattern_id": s.pattern_id,
                    "intervention_id": s.intervention_id,
                    "worked": s.worked,
                }
                for s in self.settled
            ],
            "notes": list(self.notes),
        }


def choose_directive(
    directives: Sequence[Directive], spec: PatternSpec, detection: Detection, embedder: Any = None
) -> DirectiveMatch | None:
    context = f"{spec.name} {detection.tool} {detection.target} {detection.error}"
    found = match_directives(
        directives,
        spec.keywords,
        context,
        embedder=embedder,
        description=f"{spec.name}. {spec.description}",
    )
    return found[0] if found else None


class Monitor:
    def __init__(
        self,
        patterns: PatternSet,
        *,
        directives: Callable[[], Sequence[Directive]] | None = None,
        ledger: Callable[[], BehaviorLedger | None] | None = None,
        embedder: Any = None,
        config: MonitorConfig | None = None,
    ) -> None:
        self.patterns = patterns
        self._directives = directives
        self._ledger_factory = ledger
        self._ledger: BehaviorLedger | None = None
        self.embedder = embedder
        self.config = config or MonitorConfig()

    def ledger(self) -> BehaviorLedger | None:
        if self._ledger is None and self._ledger_factory is not None and self.config.learn:
            self._ledger = self._ledger_factory()
        return self._ledger

    def observe(
        self,
        session: SessionLog,
        call: ToolCall,
        context: str = "global",
        profile: Mapping[str, frozenset[str]] | None = None,
    ) -> Observation:
        """``profile`` (project_profile) limits the patterns to those whose context_filters
        match the project; without it every pattern applies."""
        notes: list[str] = []
        patterns = self.patterns.for_project(profile)
        known = KnownErrors(session.path.parent.parent) if self.config.known_errors else None
        with session.locked():
            appended = session.append(call, keep=max(2, self.patterns.max_window))
            detections = detect(appended.calls, patterns.patterns)
            state = appended.state
            n = int(state.get("n", 0)) + 1
            state["n"] = n
            settled = self._settle(state, detections, n)
            alert = self._pick(state, detections, n)
            if alert is None and known is not None and call.failed and call.error_sig:
                alert = self._known_error(state, known, patterns, call, session.session_id, n)
            reminder = None
            if alert is not None:
                spec = self.patterns.get(alert.pattern_id)
                assert spec is not None
                reminder, shown_id = self._remind(spec, alert, context, session, call.ts, notes)
                key = f"{alert.pattern_id}|{alert.signature}"
                state.setdefault("shown", {})[f"{key}|{alert.stage}"] = n
                state["last_alert_n"] = n
                if alert.stage in (LOOP, KNOWN):
                    state["shown"][f"{key}|warning"] = n
                if alert.stage == KNOWN:  # a loop of this error later is an escalation
                    state["shown"][f"known|{alert.signature}"] = n
                pending = [
                    *state.get("pending", []),
                    {
                        "pattern_id": spec.id,
                        "intervention_id": reminder.intervention_id,
                        "signature": alert.signature,
                        "n": n,
                        "relation_id": shown_id,
                        "context": context,
                    },
                ][-MAX_PENDING:]
                state["pending"] = pending
                state["alerts"] = [
                    *state.get("alerts", []),
                    {
                        **alert.to_json(),
                        "ts": call.ts,
                        "intervention_id": reminder.intervention_id,
                        "context": context,
                    },
                ][-MAX_ALERTS_KEPT:]
                if known is not None and alert.stage == LOOP and call.failed and call.error_sig:
                    # Any loop on a failing call (same error, rapid retry, same call) makes its
                    # error known: the next session is warned at first sight of it.
                    known.record(
                        f"err:{call.error_sig}",
                        pattern_id=spec.id,
                        error=alert.error,
                        session=session.session_id,
                        context=context,
                        now=call.ts,
                    )
            state["last_ts"] = call.ts
            session.write_state(state)
        for s in settled:
            self._learn(partial(self._record_settled, s=s, now=call.ts), notes)
        return Observation(call, tuple(detections), reminder, alert, tuple(settled), tuple(notes))

    # -- steps ---------------------------------------------------------------------------------
    def _known_error(
        self,
        state: dict[str, Any],
        known: KnownErrors,
        patterns: PatternSet,
        call: ToolCall,
        session_id: str,
        n: int,
    ) -> Detection | None:
        """The first sight in this session of an error that looped in another one."""
        signature = f"err:{call.error_sig}"
        seen = state.setdefault("errors_seen", [])
        if signature in seen:
            return None
        state["errors_seen"] = [*seen, signature][-self.config.max_errors_seen :]
        entry = known.get(signature)
        if not entry or entry.get("session") == session_id:
            return None
        spec = patterns.get(str(entry.get("pattern_id", "")))
        if spec is None:
            return None
        error = first_error(call) or str(entry.get("error", ""))
        count = int(entry.get("count", 1))
        return Detection(
            spec.id,
            KNOWN,
            count,
            spec.trigger.threshold,
            signature,
            call.tool,
            call.target,
            error,
            f'an error that looped in an earlier session ({count}x) is back: "{error}"',
        )

    def _settle(
        self, state: dict[str, Any], detections: Sequence[Detection], n: int
    ) -> list[SettledOutcome]:
        again = {(d.pattern_id, d.signature) for d in detections}
        keep, settled = [], []
        for p in state.get("pending", []):
            if self.patterns.get(p.get("pattern_id", "")) is None:
                continue  # pattern removed since: nothing to learn
            came_back = (p["pattern_id"], p["signature"]) in again and n > p["n"]
            if came_back or n - p["n"] >= self.config.outcome_after_calls:
                settled.append(
                    SettledOutcome(
                        p["pattern_id"],
                        p["intervention_id"],
                        not came_back,
                        p.get("relation_id") or "",
                    )
                )
            else:
                keep.append(p)
        state["pending"] = keep
        return settled

    def _pick(
        self, state: dict[str, Any], detections: Sequence[Detection], n: int
    ) -> Detection | None:
        shown = state.get("shown", {})
        recent_alert = n - int(state.get("last_alert_n", -(10**9))) < self.config.min_gap_calls
        for d in detections:
            key = f"{d.pattern_id}|{d.signature}"
            last = shown.get(f"{key}|{d.stage}")
            if last is not None and n - int(last) < self.config.cooldown_calls:
                continue
            escalation = d.stage == LOOP and (
                f"{key}|warning" in shown or f"known|{d.signature}" in shown
            )
            if recent_alert and not escalation:
                continue
            return d
        return None

    def _remind(
        self,
        spec: PatternSpec,
        alert: Detection,
        context: str,
        session: SessionLog,
        now: float,
        notes: list[str],
    ) -> tuple[Reminder, str]:
        iv_id = spec.interventions[0].id
        ledger = self._safe_ledger(notes)
        if ledger is not None:
            try:
                iv_id, _why = ledger.best_intervention(spec, context)
            except Exception as exc:  # history is a bonus; the reminder is not
                notes.append(f"intervention history unavailable: {exc}")
        match = None
        if self._directives is not None:
            try:
                match = choose_directive(self._directives(), spec, alert, self.embedder)
            except Exception as exc:  # a broken CLAUDE.md must not silence us
                notes.append(f"directives unavailable: {exc}")
        iv = spec.intervention(iv_id) or spec.interventions[0]
        reminder = render_reminder(alert, spec, iv, match, self.config.max_chars)
        shown_id = new_id()
        self._learn(
            lambda led: (
                led.record_occurrence(
                    spec, context, alert.signature, alert.stage, now=now, error=alert.error
                ),
                led.record_shown(
                    spec,
                    iv.id,
                    context,
                    signature=alert.signature,
                    session=session.session_id,
                    directive_id=reminder.directive_id,
                    relation_id=shown_id,
                    now=now,
                ),
            ),
            notes,
        )
        return reminder, shown_id

    def _safe_ledger(self, notes: list[str]) -> BehaviorLedger | None:
        try:
            return self.ledger()
        except Exception as exc:  # the store may be unusable; we still warn
            notes.append(f"learning store unavailable: {exc}")
            self._ledger_factory = None
            return None

    def _record_settled(self, ledger: BehaviorLedger, s: SettledOutcome, now: float) -> None:
        spec = self.patterns.get(s.pattern_id)
        if spec is None:  # a pattern removed since the reminder was shown
            raise LookupError(f"unknown pattern {s.pattern_id!r}")
        ledger.record_outcome(
            spec,
            s.intervention_id,
            None,
            s.worked,
            inferred=True,
            relation_id=s.relation_id,
            now=now,
        )

    def _learn(self, write: Callable[[BehaviorLedger], Any], notes: list[str]) -> None:
        ledger = self._safe_ledger(notes)
        if ledger is None:
            return
        try:
            write(ledger)
        except Exception as exc:  # recorded as a note, never raised to the hook
            notes.append(f"could not record learning: {exc}")
            log.warning("behaviour monitor: %s", exc)


__all__ = ["Monitor", "MonitorConfig", "Observation", "SettledOutcome", "choose_directive"]
