"""What changed since the last consolidation run: the scope an incremental run works on.

A live run leaves a small state behind (``cortexgraph.run_state``): its clock (``now``), for
every memory a fingerprint of the fields the agents judge (content, status, use, strength,
promotion, entities, tags, creation time, mentions) and the next moment its decay score
crosses a bar that changes what the decay analyzer or the promoter says of it, and the
memories the decay run listed as fading with their urgency and forget moment (what its
digests need of them).

The next run compares: a memory is *changed* when it is new or its fingerprint differs (saved,
touched, edited, merged, promoted, restored, archived); it is *crossing* when its predicted
crossing time (``storage.decay.crossing_time``, closed form) has come since. Nothing is scored to
find either. Only changed and crossing memories get a new crossing time.
"""

from __future__ import annotations

import math
import operator
import zlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import compress, repeat
from typing import Any

import numpy as np

from cortexgraph.agents.entity_standing import EntityStanding
from cortexgraph.agents.run_scope import RunScope
from cortexgraph.storage.decay import (
    DAY,
    DecayConfig,
    crossing_time,
    decay_thresholds,
    memory_score,
)
from cortexgraph.storage.memory_rows import DUE_TYPE, PRINT_TYPE, MemoryRows
from cortexgraph.storage.models import MENTIONS_KEY, Memory, MemoryStatus
from cortexgraph.storage.protocol import WriteLog

_ID = operator.attrgetter("id")


def fingerprint(memory: Memory) -> int:
    """A stable (cross-process) checksum of what the agents judge a memory by: its creation
    time too (the promotion window, cluster guards, an entity's time chain) and a transcript
    line's mentions (relations pair by them; the entity step reads them in a later run)."""
    extra = memory.meta.extra
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
            str(memory.created_at),
            "|".join(memory.mentions) if MENTIONS_KEY in extra else "",
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


@dataclass(slots=True)
class ChangeTracker:
    """Compares the store with the last run's state; ``state()`` is what this run leaves."""

    config: DecayConfig
    bars: tuple[float, ...] = ()
    # Per memory listed by ``scope``, in its order: (fingerprint, next crossing time). Arrays
    # (storage.memory_rows) where only the appended lines were compared, else a dict.
    prints: Mapping[str, tuple[int, float]] = field(default_factory=dict)
    # The memory objects ``prints`` were taken of, in the listing's order: records are
    # immutable, so the store holding the same object after the run means the same
    # fingerprint, without computing it again.
    listed: list[Memory] = field(default_factory=list)
    # ``listed`` by id, where ``scope`` compared every memory (built from it where needed).
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
    # Whether the run wants embeddings (the settings and the run's options; None: not said),
    # set by agents.incremental.begin and recorded: a run that wants otherwise opens the
    # store (cortexgraph.run_state.unchanged_since).
    embeddings: bool | None = None

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
        memories = self.listed = list(memories)
        old: Mapping[str, Any] = (previous or {}).get("memories") or {}
        since = (previous or {}).get("now")
        if written is not None and isinstance(old, MemoryRows) and len(old):
            # Only the rows of new and written memories, and those whose crossing time has
            # come, are looked at one by one; every other row is the last state's.
            changed, crossing, seen = self._compare_rows(memories, old, now, written)
        else:
            if isinstance(old, MemoryRows):
                old = old.as_dict()  # looked up once per memory below
            changed, crossing, seen = self._compare_each(memories, old, now, written)
        if not isinstance(since, int | float) or not old:
            return None
        # Still there and active: a memory the last run merged or promoted after decay
        # listed it is not changed (its fingerprint was taken after the run's writes).
        last_fading = (previous or {}).get("fading") or ()
        by_id = self._seen() if last_fading else {}
        active = MemoryStatus.ACTIVE
        fading = frozenset(
            {i for i in last_fading if (m := by_id.get(i)) is not None and m.status is active}
        )
        return RunScope(
            float(since),
            frozenset(changed),
            frozenset(crossing),
            fading,
            len(old) - seen,
            (previous or {}).get("fading_marks") or {},
            EntityStanding.from_state((previous or {}).get("entity_standing")),
            (previous or {}).get("gc_settled") is True,
            frozenset((previous or {}).get("unmerged") or ()),
            (previous or {}).get("similarity"),
        )

    def _seen(self) -> dict[str, Memory]:
        if not self.seen and self.listed:
            self.seen = dict(zip(map(_ID, self.listed), self.listed, strict=True))
        return self.seen

    def _compare_each(
        self,
        memories: list[Memory],
        old: Mapping[str, Any],
        now: float,
        written: Collection[str] | None,
    ) -> tuple[set[str], set[str], int]:
        """``scope``'s comparison a memory at a time: (changed, crossing, how many of the
        memories the last state holds)."""
        changed: set[str] = set()
        crossing: set[str] = set()
        seen = 0
        # locals: the loop runs once per memory of the store (12k at 10k: 8 ms)
        seen_by_id, get = self.seen, old.get
        prints: dict[str, tuple[int, float]] = {}
        self.prints = prints
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
                        prints[mid] = (fp, due)
                        continue
                    crossing.add(mid)
                else:
                    changed.add(mid)
            else:
                changed.add(mid)
            prints[mid] = (fp, next_crossing(m, now, self.config, self.bars))
        return changed, crossing, seen

    def _compare_rows(
        self, memories: list[Memory], old: MemoryRows, now: float, written: Collection[str]
    ) -> tuple[set[str], set[str], int]:
        """``_compare_each`` with ``written`` known, as array operations: the same sets, the
        same rows, without a step per memory for those no one wrote."""
        ids = list(map(_ID, memories))
        n, held = len(ids), len(old)
        if ids[:held] == old.ids:  # nothing removed or moved since: row i is row i
            rows = np.arange(n)
            rows[held:] = -1
        else:
            rows = np.fromiter(map(old.row_of().get, ids, repeat(-1)), dtype=np.int64, count=n)
        known = rows >= 0
        at = np.where(known, rows, 0)
        prints = np.where(known, old.prints[at], 0).astype(PRINT_TYPE)
        due = np.where(known, old.due[at], math.inf).astype(DUE_TYPE)
        look = ~known
        if written:
            look |= np.fromiter(map(written.__contains__, ids), dtype=bool, count=n)
        changed: set[str] = set()
        crossing: set[str] = set()
        for i in np.flatnonzero(~look & (due <= now)).tolist():
            m = memories[i]
            crossing.add(m.id)
            due[i] = next_crossing(m, now, self.config, self.bars)
        for i in np.flatnonzero(look).tolist():
            m = memories[i]
            fp = fingerprint(m)
            if known[i] and prints[i] == fp:
                if due[i] > now:
                    continue
                crossing.add(m.id)
            else:
                changed.add(m.id)
            prints[i] = fp
            due[i] = next_crossing(m, now, self.config, self.bars)
        self.prints = MemoryRows(ids, prints, due)
        return changed, crossing, int(np.count_nonzero(known))

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
        current = list(memories)
        if not self._refresh_rows(current, now, writes):
            self._refresh_each(current, now, writes)
        self.seen, self.listed = {}, []

    def _refresh_rows(self, current: list[Memory], now: float, writes: WriteLog | None) -> bool:
        """``_refresh_each`` where the store still lists what ``scope`` listed, in its order,
        maybe followed by new memories (nothing removed): only the memories that are not the
        same objects as then are looked at. False, changing nothing, where it does not."""
        listed = self.listed
        n = len(listed)
        rows = MemoryRows.of(self.prints)
        if len(rows) != n or len(current) < n:
            return False
        ids = list(map(_ID, current))
        if ids[:n] != rows.ids or list(map(_ID, listed)) != rows.ids:
            return False
        prints, due = rows.prints.copy(), rows.due.copy()
        others = writes is None
        for i in compress(range(n), map(operator.is_not, current, listed)):
            m = current[i]
            if writes is not None and m.id not in writes.written:
                others = True  # keeps the fingerprint the run started from
                continue
            fp = fingerprint(m)
            if prints[i] != fp:
                prints[i] = fp
                due[i] = next_crossing(m, now, self.config, self.bars)
        kept: list[int] = []
        added: list[tuple[int, float]] = []
        for i in range(n, len(current)):
            m = current[i]
            if writes is not None and m.id not in writes.created:
                others = True  # saved by someone else: no fingerprint, new to the next run
                continue
            kept.append(i)
            added.append((fingerprint(m), self._unjudged_due(m, now)))
        if added:
            new_prints, new_due = zip(*added, strict=True)
            prints = np.concatenate((prints, np.array(new_prints, dtype=PRINT_TYPE)))
            due = np.concatenate((due, np.array(new_due, dtype=DUE_TYPE)))
        self.prints = MemoryRows(ids[:n] + [ids[i] for i in kept], prints, due)
        self.others_wrote = others
        return True

    def _refresh_each(self, current: list[Memory], now: float, writes: WriteLog | None) -> None:
        """``refresh`` a memory at a time."""
        fresh: dict[str, tuple[int, float]] = {}
        seen = self._seen()
        prints = self.prints if type(self.prints) is dict else dict(self.prints)
        others = writes is None
        for m in current:
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
            if before is None:
                fresh[m.id] = (fp, self._unjudged_due(m, now))
            elif before[0] == fp:
                fresh[m.id] = before
            else:
                fresh[m.id] = (fp, next_crossing(m, now, self.config, self.bars))
        if writes is not None and not others:  # deleted by someone else
            others = any(i not in fresh and i not in writes.written for i in prints)
        self.others_wrote = others
        self.prints = fresh

    def _unjudged_due(self, m: Memory, now: float) -> float:
        """The crossing time of a memory new since ``scope`` (the run's merge made it, after
        its decay step judged the store): ``now`` where a decay run would list it fading, so
        the next run judges it as a full run would; else its next crossing."""
        if m.status is MemoryStatus.ACTIVE and (
            memory_score(m, now, self.config) <= self.config.danger_zone_max
        ):
            return now
        return next_crossing(m, now, self.config, self.bars)

    def state(
        self, now: float, fading: Iterable[str], marks: Mapping[str, tuple[str, float]]
    ) -> dict[str, Any]:
        """What the next run compares with: each memory's (fingerprint, next crossing time;
        inf: none), the fading memories and their marks, as ``cortexgraph.run_state`` stores
        it."""
        return {
            "version": 2,
            "now": now,
            "memories": self.prints if isinstance(self.prints, MemoryRows) else dict(self.prints),
            "fading": sorted(fading),
            "fading_marks": marks,
        }


__all__ = ["ChangeTracker", "RunScope", "fingerprint", "next_crossing"]
