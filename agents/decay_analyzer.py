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
import math
from collections import Counter
from collections.abc import Collection, Mapping, Set

from cortexgraph.agents.common import snippet
from cortexgraph.agents.decay_findings import (
    DecayAction,
    DecayAnalyzerConfig,
    DecayFinding,
    DecayReport,
    FadingMark,
    GcMode,
    Urgency,
    fading_mark,
    urgency_of,
)
from cortexgraph.agents.decay_issues import DecayIssues
from cortexgraph.agents.protocols import IssueTracker
from cortexgraph.agents.undo import Graveyard, collect_garbage
from cortexgraph.storage.decay import (
    crossing_time,
    forgettable,
    is_valuable,
    memory_score,
    promotion_reason,
)
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore

log = logging.getLogger(__name__)


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
        return urgency_of(score, self.config)

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

    def finding(self, memory: Memory, score: float, now: float) -> DecayFinding:
        decay = self.config.decay
        return DecayFinding(
            memory_id=memory.id,
            score=score,
            urgency=self.urgency(score),
            action=self.recommend(memory, now),
            below_forget=score < decay.forget_threshold,
            in_danger_zone=decay.danger_zone_min <= score <= decay.danger_zone_max,
            preview=snippet(memory.content),
            forget_at=self.forget_at(memory),
        )

    def forget_at(self, memory: Memory) -> float | None:
        """When its score falls (fell) to the forget threshold by time alone; None: never."""
        t = crossing_time(memory, self.config.decay.forget_threshold, self.config.decay)
        if t == math.inf:
            return None
        return memory.last_used if t == -math.inf else t  # below it from its last use on

    def finding_now(self, memory_id: str, now: float) -> DecayFinding | None:
        """The finding of one memory the run did not judge (a carried one a digest lists)."""
        memory = self.store.find(memory_id)
        if memory is None or memory.status is not MemoryStatus.ACTIVE:
            return None
        return self.finding(memory, memory_score(memory, now, self.config.decay), now)

    def run(
        self,
        *,
        now: float,
        dry_run: bool = False,
        scope: Collection[str] | None = None,
        carried: Collection[str] = (),
        marks: Mapping[str, FadingMark] | None = None,
    ) -> DecayReport:
        """Score the active memories; with ``scope`` (an incremental run: the changed and
        crossing memories) only those. ``carried``: the last run's fading memories outside
        ``scope``, whose findings stand (no bar crossed since); ``marks`` (the run state's)
        give their urgency and forget moment, so that they are counted in their digests
        without being read or scored; one without a mark is scored (a state from before
        marks). A digest that lists one makes its finding."""
        cfg = self.config
        if scope is None:
            active = self.store.list(status=MemoryStatus.ACTIVE)
        else:
            found = self.store.find_many(sorted(scope))
            active = [m for m in found if m.status is MemoryStatus.ACTIVE]
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
            findings.append(self.finding(memory, score, now))
        findings.sort(key=lambda f: (f.score, f.memory_id))
        kept = self._carried(carried, set(scope or ()), marks or {}, now)
        counts: Counter[str] = Counter()
        collected = self._collect(findings, dry_run, now)
        digests: list[tuple[str, str, int]] = []
        if self.tracker is not None and cfg.open_issues and not dry_run:
            issues = DecayIssues(self.tracker, self.store, cfg)
            findings = issues.sync(
                findings,
                set(collected),
                counts,
                digests,
                now,
                carried=kept,
                make=lambda memory_id: self.finding_now(memory_id, now),
            )
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
            carried=kept,
        )

    def _carried(
        self,
        ids: Collection[str],
        judged: set[str],
        marks: Mapping[str, FadingMark],
        now: float,
    ) -> dict[str, FadingMark]:
        """The marks of the carried memories: from ``marks`` (no bar crossed since the last
        run, so its urgency and forget moment stand: 44k carried at 100k memories were read
        and scored in Python, 0.5 s), else scored, if still active and fading."""
        # Set operations and one comprehension: this goes over every carried id (44k at 100k
        # memories) each run.
        outside = (ids if isinstance(ids, Set) else frozenset(ids)) - judged
        out = {i: marks[i] for i in outside if i in marks}
        unmarked = list(outside - out.keys()) if len(out) < len(outside) else []
        if not unmarked:
            return out
        decay = self.config.decay
        # One read of the active memories, not a find() per id: each find checks the store's
        # files for other writers (three stats), 1.6 s for 64k carried ids at 100k memories.
        active = {m.id: m for m in self.store.list(status=MemoryStatus.ACTIVE)}
        for i in unmarked:
            memory = active.get(i)
            if memory is None:
                continue
            score = memory_score(memory, now, decay)
            if score <= decay.danger_zone_max:
                out[i] = fading_mark(self.urgency(score), self.forget_at(memory))
        return out

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


__all__ = ["DecayAnalyzer"]
