"""What changed since the last consolidation run: the scope an incremental run works on.

A live run leaves a small state behind (``cortexgraph.run_state``): its clock (``now``), for
every memory a fingerprint of the fields the agents judge (content, status, use, strength,
promotion, entities, tags) and the next moment its decay score crosses a bar that changes what
the decay analyzer or the promoter says of it, and the memories the decay run listed as fading
with their urgency and forget moment (what its digests need of them).

The next run compares: a memory is *changed* when it is new or its fingerprint differs (saved,
touched, edited, merged, promoted, restored, archived); it is *crossing* when its predicted
crossing time (``storage.decay.crossing_time``, closed form) has come since. Nothing is scored to
find either. Only changed and crossing memories get a new crossing time.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cortexgraph.storage.decay import DAY, DecayConfig, crossing_time, decay_thresholds
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.protocol import WriteLog


def fingerprint(memory: Memory) -> int:
    """A stable (cross-process) checksum of what the agents judge a memory by."""
    text = "\x1f".join(
        (
            memory.content,
            memory.status,  # a StrEnum: its value, without the enum's property lookup
            str(memory.use_count),
            str(memory.last_used),
            repr(memory.strength),
            str(memory.promoted_at),
            str(memory.promoted_to),
            "|".join(memory.entities),
            "|".join(memory.meta.tags),
            "core" if memory.is_core else "",
        )
    )
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def next_crossing(
    memory: Memory, after: float, config: DecayConfig, bars: Iterable[float]
) -> float:
    """The first moment after ``after`` at which time alone changes what a run says of the
    memory: its score falls through one of ``bars``, or its promotion window closes."""
    best = math.inf
    for bar in bars:
        t = crossing_time(memory, bar, config)
        if after < t < best:
            best = t
    if memory.use_count >= config.promote_use_count:
        closes = memory.created_at + config.promote_time_window_days * DAY
        if after < closes < best:
            best = closes
    return best


@dataclass(frozen=True, slots=True)
class RunScope:
    """The memories an incremental run looks at; ``None`` in its place means a full run."""

    since: float  # the last run's clock
    changed: frozenset[str]
    crossing: frozenset[str]
    # Listed fading by the last run and still active (decay counts them in its digests).
    fading: frozenset[str] = frozenset()
    removed: int = 0  # memories gone from the store since
    # The last run's word on its fading memories: (urgency, forget moment) by id
    # (agents.decay_findings.FadingMark; absent in a state from before marks).
    marks: Mapping[str, tuple[str, float]] = field(default_factory=dict)

    @property
    def ids(self) -> frozenset[str]:
        return self.changed | self.crossing

    @property
    def empty(self) -> bool:
        return not self.changed and not self.crossing and not self.removed

    def describe(self) -> str:
        at = datetime.fromtimestamp(self.since, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        if self.empty:
            return f"incremental: nothing changed since the last run at {at}"
        gone = f", {self.removed} removed" if self.removed else ""
        return (
            f"incremental: {len(self.changed)} changed and {len(self.crossing)} crossing a decay "
            f"bar since the last run at {at}{gone}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "changed": len(self.changed),
            "crossing": len(self.crossing),
            "removed": self.removed,
            "nothing_changed": self.empty,
            "summary": self.describe(),
        }


@dataclass(slots=True)
class ChangeTracker:
    """Compares the store with the last run's state; ``state()`` is what this run leaves."""

    config: DecayConfig
    bars: tuple[float, ...] = ()
    prints: dict[str, tuple[int, float]] = field(default_factory=dict)
    # The memory objects ``prints`` were taken of: records are immutable, so the store holding
    # the same object after the run means the same fingerprint, without computing it again.
    seen: dict[str, Memory] = field(default_factory=dict)
    # Set by ``refresh``: someone else saved, changed or deleted a memory during the run, or
    # the store was read again whole (another process's compaction): the store files then
    # hold more than this run's state accounts for.
    others_wrote: bool = True
    # Set by agents.incremental.begin when a last state exists but this run looks at every
    # memory anyway: why (said in the report's notes).
    full_because: str | None = None
    # The key of the configuration this run judges under (agents.decision_key), set by
    # agents.incremental.begin and recorded in the state it leaves.
    config_key: int | None = None

    def __post_init__(self) -> None:
        if not self.bars:
            self.bars = decay_thresholds(self.config)

    def scope(
        self,
        memories: Iterable[Memory],
        previous: Mapping[str, Any] | None,
        now: float,
        written: Collection[str] | None = None,
    ) -> RunScope | None:
        """The run's scope, or None (a full run) without a usable previous state. Also
        refreshes ``prints`` for every memory (crossing times only where needed).
        ``written``: the only memories written since the last state was taken (the store
        file's lines since, cortexgraph.run_state.appended_ids); every other one keeps its
        recorded fingerprint without computing it. None: compare every memory."""
        old: Mapping[str, Any] = (previous or {}).get("memories") or {}
        since = (previous or {}).get("now")
        changed: set[str] = set()
        crossing: set[str] = set()
        seen = 0
        # locals: the loop runs once per memory of the store (12k at 10k: 8 ms)
        seen_by_id, prints, get = self.seen, self.prints, old.get
        for m in memories:
            mid = m.id
            seen_by_id[mid] = m
            before = get(mid)
            if written is not None and before is not None and mid not in written:
                seen += 1  # as the last run left it: only its crossing time can have come
                due = before[1]
                due = math.inf if due is None else due if type(due) is float else float(due)
                if due > now:
                    prints[mid] = before if due is before[1] else (before[0], due)
                    continue
                crossing.add(mid)
                prints[mid] = (before[0], next_crossing(m, now, self.config, self.bars))
                continue
            fp = fingerprint(m)
            if before is not None:
                seen += 1
                if before[0] == fp:
                    due = float(before[1]) if before[1] is not None else math.inf
                    if due > now:
                        self.prints[m.id] = (fp, due)
                        continue
                    crossing.add(m.id)
                else:
                    changed.add(m.id)
            else:
                changed.add(m.id)
            self.prints[m.id] = (fp, next_crossing(m, now, self.config, self.bars))
        if not isinstance(since, int | float) or not old:
            return None
        # Still there and active: a memory the last run merged or promoted after decay
        # listed it is not changed (its fingerprint was taken after the run's writes).
        seen_now, active = self.seen, MemoryStatus.ACTIVE
        fading = frozenset(
            {
                i
                for i in (previous or {}).get("fading") or ()
                if i in seen_now and seen_now[i].status is active
            }
        )
        return RunScope(
            float(since),
            frozenset(changed),
            frozenset(crossing),
            fading,
            len(old) - seen,
            (previous or {}).get("fading_marks") or {},
        )

    def refresh(
        self, memories: Iterable[Memory], now: float, writes: WriteLog | None = None
    ) -> None:
        """After the run's own changes (merges, promotions, gc): fingerprints of what it
        wrote, so the next run does not count them as changed. ``writes``: what the run
        itself wrote since ``scope`` (``MemoryStore.recording_writes``). A memory someone
        else changed during the run keeps the fingerprint the run started from, and one
        someone else saved gets none, so the next run looks at both (a memory saved beside the
        run stays new even when the run's relations step read its entities). None: every
        change since ``scope`` is the run's."""
        fresh: dict[str, tuple[int, float]] = {}
        seen, prints = self.seen, self.prints
        others = writes is None
        for m in memories:
            before = prints.get(m.id)
            if before is not None and seen.get(m.id) is m:
                fresh[m.id] = before
                continue
            if writes is not None and (
                m.id not in writes.written if before is not None else m.id not in writes.created
            ):
                others = True
                if before is not None:
                    fresh[m.id] = before
                continue
            fp = fingerprint(m)
            if before is not None and before[0] == fp:
                fresh[m.id] = before
            else:
                fresh[m.id] = (fp, next_crossing(m, now, self.config, self.bars))
        if writes is not None and not others:  # deleted by someone else
            others = any(i not in fresh and i not in writes.written for i in prints)
        self.others_wrote = others
        self.prints = fresh
        self.seen = {}

    def state(
        self, now: float, fading: Iterable[str], marks: Mapping[str, tuple[str, float]]
    ) -> dict[str, Any]:
        """What the next run compares with: each memory's (fingerprint, next crossing time;
        inf: none), the fading memories and their marks, as ``cortexgraph.run_state`` stores
        it."""
        return {
            "version": 2,
            "now": now,
            "memories": dict(self.prints),
            "fading": sorted(fading),
            "fading_marks": marks,
        }


__all__ = ["ChangeTracker", "RunScope", "fingerprint", "next_crossing"]
