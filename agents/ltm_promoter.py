"""LTMPromoter: moves memories that earned it into long-term memory through a note sink.

A memory qualifies by the one promotion rule, ``storage.decay.promotion_reason`` (the MCP
``promote_memory`` tool asks the same): its score reaches the promote threshold after at least
``promote_score_min_uses`` recalls, or it was used N times within the window; or it was named in
``force_ids``. Every brand-new memory scores 1.0, and promoting all of them (as 1.x's bare score
test would) fills the vault with notes nobody came back to. Promotion writes the note first
and then marks the memory ``promoted`` with ``promoted_at`` and ``promoted_to`` (the note path).
Only active memories are considered, so a second run promotes nothing twice; a note written
before a crash is updated in place by the sink on the retry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from cortexgraph.agents.common import LABEL_PROMOTE, AgentError, ReportTable, short, snippet
from cortexgraph.agents.protocols import IssueTracker, NoteSink
from cortexgraph.agents.undo import held_by_undo
from cortexgraph.storage.decay import DecayConfig, memory_score, promotion_reason
from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.storage.linked_memories import linked_memories
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore

log = logging.getLogger(__name__)


class PromotionFailedError(AgentError):
    """Some notes could not be written; the run may be retried (promotion is idempotent)."""


@dataclass(frozen=True, slots=True)
class PromoterConfig:
    decay: DecayConfig = field(default_factory=DecayConfig)
    force_ids: tuple[str, ...] = ()
    max_per_run: int | None = None
    # Promoted memories marked in the store at once, after the sink's flush (LTMPromoter._mark);
    # None: once per run, so a batch sink writes each entity note once per run.
    mark_every: int | None = None


@dataclass(frozen=True, slots=True)
class Promotion:
    memory_id: str
    reason: str
    score: float
    preview: str
    note_path: str | None = None  # None in a dry run
    created: bool | None = None
    conflict_path: str | None = None  # a person had edited the note: our version went here

    @property
    def vault_path(self) -> str | None:  # 1.x PromotionResult names
        return self.note_path

    @property
    def criteria_met(self) -> list[str]:
        return [self.reason]


@dataclass(frozen=True, slots=True)
class PromoteReport:
    dry_run: bool
    scanned: int
    promotions: tuple[Promotion, ...]
    failed: tuple[tuple[str, str], ...]  # (memory id, error)
    sink: str
    issues_opened: int = 0  # promotions that need a person (failure, edited note)
    skipped: str = ""  # why nothing was looked at (a run after no change: the store not opened)

    def table(self) -> ReportTable:
        if self.skipped:
            return ReportTable(
                title="Promotion to long-term memory", summary=self.skipped, columns=(), rows=()
            )
        verb = "would promote" if self.dry_run else "promoted"
        return ReportTable(
            title="Promotion to long-term memory",
            summary=(
                f"{self.scanned} active scanned; {verb} {len(self.promotions)} via {self.sink}; "
                f"{len(self.failed)} failed"
            ),
            columns=("memory", "score", "reason", "note", "content"),
            rows=tuple(
                (short(p.memory_id), f"{p.score:.3f}", p.reason, p.note_path or "", p.preview)
                for p in self.promotions
            )
            + tuple((short(mid), "", f"FAILED: {err}", "", "") for mid, err in self.failed),
        )


# (memory id, reason, now) -> an outcome with ``.path`` and ``.created``: the edge may hand in
# vault_sync.promote_memory so every promotion path writes notes the same way.
PromoteFn = Callable[[str, str, float], Any]


@runtime_checkable
class _UpdatesMany(Protocol):
    """A store that applies many updates under one lock and one write (IndexedStore)."""

    def update_many(self, changes: Mapping[str, Mapping[str, Any]]) -> list[Memory]: ...


@runtime_checkable
class _Flushes(Protocol):
    """A sink that defers work to a flush (vault_sync.ObsidianNoteSink: entity notes, ledger)."""

    def flush(self) -> None: ...


class LTMPromoter:
    name = "promote"

    def __init__(
        self,
        store: MemoryStore,
        sink: NoteSink | None,
        config: PromoterConfig | None = None,
        promote: PromoteFn | None = None,
        tracker: IssueTracker | None = None,
    ) -> None:
        self.store = store
        self.sink = sink
        self.config = config or PromoterConfig(decay=store.config.decay)
        self.promote = promote
        self.tracker = tracker

    def candidates(
        self, now: float, scope: Collection[str] | None = None
    ) -> list[tuple[Memory, str]]:
        """Active memories that qualify; with ``scope`` only those (and the forced ones)."""
        forced = set(self.config.force_ids)
        return self._qualifying(self._active(scope, forced), now, forced)

    def _qualifying(
        self, active: list[Memory], now: float, forced: set[str]
    ) -> list[tuple[Memory, str]]:
        out = []
        for memory in active:
            reason = promotion_reason(memory, now, self.config.decay)
            if reason is not None and held_by_undo(memory):
                reason = None  # unpromoted by a person, not used since: stays in STM
            if reason is None and memory.id in forced:
                reason = "forced"
            if reason is not None:
                out.append((memory, reason))
        out.sort(key=lambda mr: (mr[0].created_at, mr[0].id))
        if self.config.max_per_run is not None:
            out = out[: self.config.max_per_run]
        return out

    def _active(self, scope: Collection[str] | None, forced: set[str]) -> list[Memory]:
        if scope is None:
            return self.store.list(status=MemoryStatus.ACTIVE)
        found = self.store.find_many(sorted(set(scope) | forced))
        return [m for m in found if m.status is MemoryStatus.ACTIVE]

    def run(
        self, *, now: float, dry_run: bool = False, scope: Collection[str] | None = None
    ) -> PromoteReport:
        """Promote what qualifies; ``scope`` (an incremental run): look only at the memories
        whose use (or anything else) changed, or whose promotion window closed, since."""
        if self.sink is None and self.promote is None and not dry_run:
            raise AgentError("LTMPromoter needs a note sink (a vault) to promote; none was given")
        forced = set(self.config.force_ids)
        active = self._active(scope, forced)  # read once: each find checks the store's files
        scanned = len(active)
        promotions: list[Promotion] = []
        failed: list[tuple[str, str]] = []
        # notes written, memories not yet marked: id -> (promotion, first promotion's time)
        unmarked: dict[str, tuple[Promotion, int | None]] = {}
        for memory, reason in self._qualifying(active, now, forced):
            score = memory_score(memory, now, self.config.decay)
            promo = Promotion(memory.id, reason, score, snippet(memory.content))
            if dry_run:
                promotions.append(promo)
                continue
            try:
                promo = self._promote(memory, promo, now)
            except (CortexGraphError, OSError) as exc:
                log.warning("promotion of %s failed: %s", memory.id, exc)
                failed.append((memory.id, str(exc)))
                continue
            if self.promote is not None:  # the hook marked it
                promotions.append(promo)
                continue
            unmarked[memory.id] = (promo, memory.promoted_at)
            if self.config.mark_every is not None and len(unmarked) >= self.config.mark_every:
                self._mark(unmarked, now, promotions, failed)
        self._mark(unmarked, now, promotions, failed)
        log.info(
            "promote: %d of %d active %s, %d failed",
            len(promotions),
            scanned,
            "would be promoted" if dry_run else "promoted",
            len(failed),
        )
        sink = (
            type(self.sink).__name__
            if self.sink is not None
            else ("promote hook" if self.promote is not None else "no sink")
        )
        opened = 0 if dry_run else self._open_issues(promotions, failed)
        return PromoteReport(dry_run, scanned, tuple(promotions), tuple(failed), sink, opened)

    def _open_issues(self, promotions: list[Promotion], failed: list[tuple[str, str]]) -> int:
        """A promotion that needs a person gets a ``consolidation:promote`` issue: a note the
        person had edited (our version was written beside it) or a note that failed."""
        if self.tracker is None:
            return 0
        opened = 0
        for p in promotions:
            if p.conflict_path:
                self._issue(
                    p.memory_id,
                    f"Promoted memory {short(p.memory_id)}: your edited note was kept",
                    f"The note {p.note_path} had been edited by a "
                    f"person, so cortexgraph's newer version went to {p.conflict_path}. "
                    f"Merge the two by hand.\n\n> {p.preview}",
                    {"note_path": p.note_path, "conflict_path": p.conflict_path},
                )
                opened += 1
        for memory_id, error in failed:
            self._issue(
                memory_id,
                f"Promotion of {short(memory_id)} failed",
                f"Writing the note failed: {error}. The memory stays active; the next "
                f"run retries it.",
                {"error": error[:500]},
            )
            opened += 1
        return opened

    def _issue(self, memory_id: str, title: str, text: str, meta: dict[str, Any]) -> None:
        assert self.tracker is not None
        self.tracker.create(
            title,
            description=text,
            labels=(LABEL_PROMOTE,),
            priority=2,
            metadata={"memory_id": memory_id, **meta},
            dedupe_key=f"promote:{memory_id}:{meta.get('conflict_path') or 'x'}",
        )

    def _promote(self, memory: Memory, promo: Promotion, now: float) -> Promotion:
        if self.promote is not None:
            outcome = self.promote(memory.id, promo.reason, now)
            return replace(
                promo,
                note_path=outcome.path,
                created=outcome.created,
                conflict_path=getattr(outcome, "conflict_path", None),
            )
        assert self.sink is not None
        # What vault_sync.promote_memory hands the sink (the same note whichever path writes
        # it): every relation, and every related memory by id, merged (archived) sources too.
        relations, related = linked_memories(self.store, memory.id)
        ref = self.sink.write_note(
            memory, related=related, relations=relations, reason=promo.reason, now=now
        )
        return replace(
            promo,
            note_path=ref.path,
            created=ref.created,
            conflict_path=getattr(ref, "conflict_path", None),
        )

    def _mark(
        self,
        unmarked: dict[str, tuple[Promotion, int | None]],
        now: float,
        promotions: list[Promotion],
        failed: list[tuple[str, str]],
    ) -> None:
        """Mark the memories whose notes were written ``promoted``, many at a time (one store
        write instead of one per note), after the sink's flush: a memory is marked only once
        its note, entity notes and ledger entry are written, so a crash before leaves it active
        and the next run updates its note in place (promotion is idempotent)."""
        if not unmarked:
            return
        changes = {
            mid: {
                "status": MemoryStatus.PROMOTED,
                "promoted_at": first or int(now),  # a memory promoted before keeps its date
                "promoted_to": p.note_path,
            }
            for mid, (p, first) in unmarked.items()
        }
        marked: list[str] = []
        try:
            if isinstance(self.sink, _Flushes):
                self.sink.flush()
            if isinstance(self.store, _UpdatesMany):
                self.store.update_many(changes)
                marked = list(changes)
            else:
                for mid, change in changes.items():
                    self.store.update(mid, **change)
                    marked.append(mid)
        except (CortexGraphError, OSError) as exc:
            log.warning("marking %d promoted memories failed: %s", len(changes) - len(marked), exc)
            done = set(marked)  # left active: the next run retries the rest
            failed.extend((mid, str(exc)) for mid in changes if mid not in done)
        promotions.extend(unmarked[mid][0] for mid in marked)
        unmarked.clear()


__all__ = ["LTMPromoter", "PromoteReport", "PromoterConfig", "Promotion", "PromotionFailedError"]
