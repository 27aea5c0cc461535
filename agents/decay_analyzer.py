"""DecayAnalyzer: finds memories that are fading and says what to do about each.

Urgency comes from the score (high < 0.15, medium < 0.25, low up to the danger zone's top);
the recommendation from score, use count and strength. Findings become tracked issues so a
person (or another agent) can act: one digest issue per urgency level listing its memories (kept
in step with them run after run), and, when ``memory_issues`` asks for them, one issue per
high-urgency memory as well. With ``gc`` set, the memories gc's one rule lets go
(``storage.decay.forgettable``, the MCP ``gc`` tool's rule too) are archived or deleted
(never in a dry run).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from cortexgraph.agents.common import LABEL_DECAY, ReportTable, short, snippet
from cortexgraph.agents.protocols import IssueTracker, IssueView
from cortexgraph.agents.undo import Graveyard, collect_garbage
from cortexgraph.storage.decay import (
    DecayConfig,
    forgettable,
    is_valuable,
    memory_score,
    promotion_reason,
)
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore

log = logging.getLogger(__name__)


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
    digest_max_lines: int = 200
    # gc archives first; in delete mode it deletes only what stayed archived this long (and
    # only with a graveyard to keep it in: CORTEXGRAPH_GC_GRACE_DAYS, agents.undo).
    gc_grace_days: float = 7.0

    def __post_init__(self) -> None:
        if not self.high_below <= self.medium_below <= self.decay.danger_zone_max:
            raise InvalidInputError(
                "urgency bounds must satisfy high_below <= medium_below <= danger_zone_max"
            )
        object.__setattr__(self, "gc", GcMode(self.gc))


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
    digests: tuple[tuple[str, str, int], ...] = ()  # (urgency, issue id, memories listed)

    @property
    def results(self) -> tuple[DecayFinding, ...]:  # 1.x: DecayAnalyzer.run() -> DecayResult
        return self.findings

    def count(self, action: DecayAction) -> int:
        return sum(f.action is action for f in self.findings)

    def table(self) -> ReportTable:
        by_action = ", ".join(f"{a.value} {self.count(a)}" for a in DecayAction)
        gc = f"; gc ({self.gc_mode.value}) {len(self.collected)}" if self.gc_mode != "off" else ""
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


class DecayAnalyzer:
    name = "decay"

    def __init__(
        self,
        store: MemoryStore,
        tracker: IssueTracker | None = None,
        config: DecayAnalyzerConfig | None = None,
        graveyard: Graveyard | None = None,
    ) -> None:
        self.store = store
        self.tracker = tracker
        self.config = config or DecayAnalyzerConfig(decay=store.config.decay)
        self.graveyard = graveyard
        self.purged: tuple[str, ...] = ()  # deleted by the last run (after the grace period)

    def urgency(self, score: float) -> Urgency:
        if score < self.config.high_below:
            return Urgency.HIGH
        if score < self.config.medium_below:
            return Urgency.MEDIUM
        return Urgency.LOW

    def recommend(self, memory: Memory, now: float) -> DecayAction:
        """Promote, reinforce (valuable: core, used or held strongly, ``storage.decay``),
        let gc take it (``forgettable``: the one gc rule), or a person should look."""
        decay = self.config.decay
        if promotion_reason(memory, now, decay) is not None:
            return DecayAction.PROMOTE_CANDIDATE
        if is_valuable(memory, decay):
            return DecayAction.REINFORCE
        if forgettable(memory, now, decay):
            return DecayAction.GC_CANDIDATE
        return DecayAction.NEEDS_REVIEW

    def run(self, *, now: float, dry_run: bool = False) -> DecayReport:
        cfg = self.config
        active = self.store.list(status=MemoryStatus.ACTIVE)
        findings: list[DecayFinding] = []
        danger = below = 0
        for memory in active:
            score = memory_score(memory, now, cfg.decay)
            is_danger = cfg.decay.danger_zone_min <= score <= cfg.decay.danger_zone_max
            is_below = score < cfg.decay.forget_threshold
            danger += is_danger
            below += is_below
            if score > cfg.decay.danger_zone_max:
                continue
            findings.append(
                DecayFinding(
                    memory_id=memory.id,
                    score=score,
                    urgency=self.urgency(score),
                    action=self.recommend(memory, now),
                    below_forget=is_below,
                    in_danger_zone=is_danger,
                    preview=snippet(memory.content),
                )
            )
        findings.sort(key=lambda f: (f.score, f.memory_id))
        counts: Counter[str] = Counter()
        collected = self._collect(findings, dry_run, now)
        digests: list[tuple[str, str, int]] = []
        if self.tracker is not None and cfg.open_issues and not dry_run:
            findings = self._sync_issues(findings, set(collected), counts, digests, now)
        log.info(
            "decay: %d scanned, %d danger zone, %d below forget, %d findings; issues %s%s",
            len(active),
            danger,
            below,
            len(findings),
            dict(counts),
            " (dry run)" if dry_run else "",
        )
        return DecayReport(
            dry_run=dry_run,
            scanned=len(active),
            danger_zone=danger,
            below_forget=below,
            findings=tuple(findings),
            issues_opened=counts["opened"],
            collected=collected,
            gc_mode=cfg.gc,
            issues_tracked=counts["tracked"],
            issues_reopened=counts["reopened"],
            issues_closed=counts["closed"],
            digests=tuple(digests),
        )

    def _sync_issues(
        self,
        findings: list[DecayFinding],
        collected: set[str],
        counts: Counter[str],
        digests: list[tuple[str, str, int]],
        now: float,
    ) -> list[DecayFinding]:
        """Digests per urgency level, and (if asked) one issue per high-urgency memory.

        Per-memory issues are keyed by memory (dedupe key ``decay:<id>``), so re-runs never
        duplicate them; one whose memory is no longer fading badly (used again, promoted,
        merged, archived, deleted) is closed, and reopened if the memory fades again. Issues
        opened by earlier runs keep following their memories when ``memory_issues`` is off.
        """
        assert self.tracker is not None
        known: dict[str, IssueView] = {}
        digest_issues: dict[str, IssueView] = {}
        for i in self.tracker.query(labels=(LABEL_DECAY,)):
            if i.metadata.get("digest"):
                digest_issues[str(i.metadata["digest"])] = i
            else:
                known[str(i.metadata.get("memory_id"))] = i
        live = [f for f in findings if f.memory_id not in collected]
        digest_ids = self._sync_digests(live, digest_issues, counts, digests, now)
        out: list[DecayFinding] = []
        urgent: set[str] = set()
        for f in findings:
            if f.memory_id in collected:
                out.append(f)
                continue
            digest_id = digest_ids.get(f.urgency)
            earlier = known.get(f.memory_id)
            followed = earlier is not None and earlier.status != "closed"
            if f.urgency is not Urgency.HIGH or not (self.config.memory_issues or followed):
                out.append(f if digest_id is None else _with_issue(f, digest_id))
                continue
            urgent.add(f.memory_id)
            issue = known.get(f.memory_id)
            if issue is None:
                issue = self._open_issue(f)
                counts["opened"] += 1
            elif issue.status == "closed":
                issue = self.tracker.update(issue.id, status="open")
                counts["reopened"] += 1
            else:
                counts["tracked"] += 1
            out.append(_with_issue(f, issue.id))
        for memory_id, issue in known.items():
            if issue.status != "closed" and memory_id not in urgent:
                self.tracker.close(issue.id, self._why_resolved(memory_id, collected))
                counts["closed"] += 1
        return out

    def _sync_digests(
        self,
        findings: list[DecayFinding],
        known: dict[str, IssueView],
        counts: Counter[str],
        digests: list[tuple[str, str, int]],
        now: float,
    ) -> dict[Urgency, str]:
        """One open digest per urgency level listing its memories; rewritten only when the list
        changed, closed when the level is empty, reopened when it fills again."""
        assert self.tracker is not None
        ids: dict[Urgency, str] = {}
        for level in Urgency:
            members = [f for f in findings if f.urgency is level]
            issue = known.get(level.value)
            if not members:
                if issue is not None and issue.status != "closed":
                    self.tracker.close(issue.id, f"no fading memories of {level.value} urgency")
                    counts["digests_closed"] += 1
                continue
            memory_ids = [f.memory_id for f in members]
            fields = self._digest_fields(level, members, now)
            if issue is None:
                issue = self.tracker.create(
                    fields["title"],
                    description=fields["description"],
                    labels=fields["labels"],
                    priority=fields["priority"],
                    metadata=fields["metadata"],
                    dedupe_key=f"decay-digest:{level.value}",
                )
                counts["digests_opened"] += 1
            elif issue.status == "closed" or list(issue.metadata.get("memory_ids") or ()) != (
                memory_ids
            ):
                issue = self.tracker.update(issue.id, status="open", **fields)
                counts["digests_updated"] += 1
            ids[level] = issue.id
            digests.append((level.value, issue.id, len(members)))
        return ids

    def _digest_fields(
        self, level: Urgency, members: list[DecayFinding], now: float
    ) -> dict[str, Any]:
        cap = self.config.digest_max_lines
        lines = [
            f"- {f.memory_id} score {f.score:.3f}, {f.action.value}: {f.preview}"
            for f in members[:cap]
        ]
        if len(members) > cap:
            lines.append(f"- … and {len(members) - cap} more (metadata.memory_ids lists all)")
        actions = Counter(f.action.value for f in members)
        return {
            "title": f"{len(members)} fading memories, {level.value} urgency",
            "description": (
                f"Memories whose decay score puts them at {level.value} urgency "
                f"({', '.join(f'{a} {n}' for a, n in sorted(actions.items()))}). Reinforce "
                f"the ones worth keeping (touch_memory / observe_memory_usage); this digest is "
                f"rewritten by every decay run and closed when none are left.\n\n"
                + "\n".join(lines)
            ),
            "labels": (LABEL_DECAY, f"urgency:{level.value}", "decay:digest"),
            "priority": {Urgency.HIGH: 1, Urgency.MEDIUM: 2, Urgency.LOW: 3}[level],
            "metadata": {
                "digest": level.value,
                "memory_ids": [f.memory_id for f in members],
                "count": len(members),
                "updated_at": round(now, 3),
            },
        }

    def _why_resolved(self, memory_id: str, collected: set[str]) -> str:
        if memory_id in collected:
            return f"memory {self.config.gc.value}d by gc"
        memory = self.store.find(memory_id)
        if memory is None:
            return "memory deleted"
        if memory.status is not MemoryStatus.ACTIVE:
            return f"memory {memory.status.value}"
        return "memory no longer fading badly (used or reinforced)"

    def _open_issue(self, finding: DecayFinding) -> IssueView:
        assert self.tracker is not None
        return self.tracker.create(
            f"Fading memory {short(finding.memory_id)} ({finding.action.value}): "
            f"{snippet(finding.preview, 50)}",
            description=(
                f"Memory {finding.memory_id} has decay score {finding.score:.3f} "
                f"(urgency {finding.urgency.value}). Recommended: {finding.action.value}.\n\n"
                f"> {finding.preview}"
            ),
            labels=(LABEL_DECAY, f"urgency:{finding.urgency.value}"),
            priority=1,
            metadata={
                "memory_id": finding.memory_id,
                "score": round(finding.score, 4),
                "action": finding.action.value,
            },
            dedupe_key=f"decay:{finding.memory_id}",
        )

    def _collect(self, findings: list[DecayFinding], dry_run: bool, now: float) -> tuple[str, ...]:
        """Archive the gc candidates (agents.undo.collect_garbage); in delete mode also delete,
        into the graveyard, what gc archived at least ``gc_grace_days`` ago."""
        if self.config.gc is GcMode.OFF:
            return ()
        ids = tuple(f.memory_id for f in findings if f.action is DecayAction.GC_CANDIDATE)
        delete = self.config.gc is GcMode.DELETE and self.graveyard is not None
        if self.config.gc is GcMode.DELETE and self.graveyard is None:
            log.warning("decay: gc delete without a graveyard only archives (nothing is lost)")
        result = collect_garbage(
            self.store,
            ids,
            delete=delete,
            now=now,
            grace_days=self.config.gc_grace_days,
            graveyard=self.graveyard,
            dry_run=dry_run,
        )
        self.purged = result.purged
        return ids if dry_run else result.archived


def _with_issue(finding: DecayFinding, issue_id: str) -> DecayFinding:
    from dataclasses import replace

    return replace(finding, issue_id=issue_id)


__all__ = [
    "DecayAction",
    "DecayAnalyzer",
    "DecayAnalyzerConfig",
    "DecayFinding",
    "DecayReport",
    "GcMode",
    "Urgency",
]
