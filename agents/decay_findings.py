"""What a decay run decides and reports: urgency, recommended action, gc mode, config, findings.

Apart from the analyzer so that its issue bookkeeping (decay_issues.py) shares these types.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from cortexgraph.agents.common import ReportTable, short
from cortexgraph.storage.decay import DecayConfig
from cortexgraph.storage.errors import InvalidInputError


class Urgency(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class DecayAction(StrEnum):
    REINFORCE = "reinforce"
    GC_CANDIDATE = "gc_candidate"
    NEEDS_REVIEW = "needs_review"
    PROMOTE_CANDIDATE = "promote_candidate"


class GcMode(StrEnum):
    OFF = "off"
    ARCHIVE = "archive"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class DecayAnalyzerConfig:
    decay: DecayConfig = field(default_factory=DecayConfig)
    high_below: float = 0.15
    medium_below: float = 0.25
    open_issues: bool = True
    gc: GcMode = GcMode.OFF
    # One issue per high-urgency memory besides the digests (CORTEXGRAPH_DECAY_MEMORY_ISSUES):
    # 302 demo memories made 124 of them, too many for a person to read.
    memory_issues: bool = False
    # Memories the high-urgency digest lists (its most urgent; decay_digests.py): a digest
    # once listed every member, tens of thousands at 100k memories, rewritten and committed
    # whenever one entered or left.
    digest_max_lines: int = 20
    # gc archives first; in delete mode it deletes only what stayed archived this long (and
    # only with a graveyard to keep it in: CORTEXGRAPH_GC_GRACE_DAYS, agents.undo).
    gc_grace_days: float = 7.0

    def __post_init__(self) -> None:
        if not self.high_below <= self.medium_below <= self.decay.danger_zone_max:
            raise InvalidInputError(
                "urgency bounds must satisfy high_below <= medium_below <= danger_zone_max"
            )
        object.__setattr__(self, "gc", GcMode(self.gc))


def urgency_of(score: float, config: DecayAnalyzerConfig) -> Urgency:
    if score < config.high_below:
        return Urgency.HIGH
    if score < config.medium_below:
        return Urgency.MEDIUM
    return Urgency.LOW


@dataclass(frozen=True, slots=True)
class DecayFinding:
    memory_id: str
    score: float
    urgency: Urgency
    action: DecayAction
    below_forget: bool
    in_danger_zone: bool
    preview: str
    issue_id: str | None = None
    # When its score falls (fell) to the forget threshold by time alone; None: never. Fixed
    # until the memory changes, so it orders a digest without scoring its members again.
    forget_at: float | None = None

    @property
    def mark(self) -> FadingMark:
        return fading_mark(self.urgency, self.forget_at)


# What the next incremental run needs of a fading memory it does not judge again (its run
# state keeps it): urgency level and forget moment (inf: never). Neither moves until the memory
# changes or crosses a bar, and either puts it in that run's scope.
FadingMark = tuple[Urgency, float]


def fading_mark(urgency: Urgency, forget_at: float | None) -> FadingMark:
    return (urgency, math.inf if forget_at is None else forget_at)


@dataclass(frozen=True, slots=True)
class DecayReport:
    dry_run: bool
    scanned: int
    danger_zone: int
    below_forget: int
    findings: tuple[DecayFinding, ...]
    issues_opened: int  # new this run (a re-run finds its earlier issues, opens none)
    collected: tuple[str, ...]  # gc'd memory ids (would be, in a dry run)
    gc_mode: GcMode
    issues_tracked: int = 0  # high-urgency findings whose issue was already open
    issues_reopened: int = 0  # closed earlier, fading badly again
    issues_closed: int = 0  # the memory recovered, was promoted, archived or deleted
    # (urgency, digest issue id, memories at that urgency): the exact count; the digest shows it
    # rounded above 100 and lists only the most urgent (decay_digests.py).
    digests: tuple[tuple[str, str, int], ...] = ()
    # Why nothing was scored (an incremental run after no change: the last run's word stands).
    skipped: str = ""
    # An incremental run: the last run's fading memories outside its scope, still fading and
    # judged as then (no bar crossed since), with their marks (kept for the next run); not in
    # ``findings``. Tens of thousands at 100k memories: JSON gives their number.
    carried: Mapping[str, FadingMark] = field(default_factory=dict, metadata={"to_json": len})

    @property
    def results(self) -> tuple[DecayFinding, ...]:  # 1.x: DecayAnalyzer.run() -> DecayResult
        return self.findings

    def count(self, action: DecayAction) -> int:
        return sum(f.action is action for f in self.findings)

    def table(self) -> ReportTable:
        by_action = ", ".join(f"{a.value} {self.count(a)}" for a in DecayAction)
        gc = f"; gc ({self.gc_mode.value}) {len(self.collected)}" if self.gc_mode != "off" else ""
        if self.skipped:
            return ReportTable(
                title="Decay analysis", summary=self.skipped, columns=("memory",), rows=()
            )
        return ReportTable(
            title="Decay analysis",
            summary=(
                f"{self.scanned} active scanned, {self.danger_zone} in the danger zone, "
                f"{self.below_forget} below the forget threshold; {by_action}; "
                f"issues: {self.issues_opened} opened, {self.issues_tracked} already open, "
                f"{self.issues_reopened} reopened, {self.issues_closed} closed; digests "
                f"{', '.join(f'{u} {n}' for u, _, n in self.digests) or 'none'}{gc}"
            ),
            columns=("memory", "score", "urgency", "action", "issue", "content"),
            rows=tuple(
                (
                    short(f.memory_id),
                    f"{f.score:.3f}",
                    f.urgency.value,
                    f.action.value,
                    f.issue_id or "",
                    f.preview,
                )
                for f in self.findings
            ),
        )


__all__ = [
    "DecayAction",
    "DecayAnalyzerConfig",
    "DecayFinding",
    "DecayReport",
    "FadingMark",
    "GcMode",
    "Urgency",
    "fading_mark",
    "urgency_of",
]
