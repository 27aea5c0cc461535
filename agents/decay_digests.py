"""The decay digests: one issue per urgency level, the same size whatever the store's.

A digest says how many memories are at its level (exact below 100, else to two significant
figures: "about 44,000"). The high-urgency digest also lists its ``digest_max_lines`` most
urgent members, in the order their scores fall (or fell) to the forget threshold, earliest
first, ties by id. That moment is fixed until the memory itself changes, so time alone never
reorders the list (scores overtake each other on the power-law curve), and it is known without
scoring the level's members again: an incremental run reads it from the run state
(``FadingMark``). Nothing leaves the high level by time alone, so its list moves only when a
listed memory is used, archived or deleted, or a more urgent one arrives. The medium and low
levels list none: their most urgent members are the ones about to fall to the next level, so
such a list would change on nearly every run of a big store, and none of them is at risk yet.
A run rewrites a digest only when what it shows changes (the rounded count or the list),
closes it when the level empties and reopens it when the level fills again.

A digest once listed every member in ``metadata.memory_ids``: tens of thousands of ids at 100k
memories, rewritten and committed (1-7 s) whenever one memory entered or left. The exact counts
are in the run's report (``DecayReport.digests``); every fading memory, scored, in
``cortexgraph-consolidate --agent decay --full --dry-run --json`` (``reports.decay.findings``).
A digest written in the old format (no ``format`` in its metadata) is rewritten by the next
run, and a second open digest of one level is closed as a duplicate.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any

from cortexgraph.agents.common import LABEL_DECAY
from cortexgraph.agents.decay_findings import DecayAnalyzerConfig, DecayFinding, FadingMark, Urgency
from cortexgraph.agents.protocols import IssueTracker, IssueView

DIGEST_FORMAT = 2  # 1 (no ``format`` key): every member listed in metadata.memory_ids
DIGEST_LABEL = "decay:digest"
PRIORITY = {Urgency.HIGH: 1, Urgency.MEDIUM: 2, Urgency.LOW: 3}
FULL_LIST = "cortexgraph-consolidate --agent decay --full --dry-run --json"
LISTED = (Urgency.HIGH,)  # the levels whose digest lists members


def about(count: int) -> int:
    """``count`` as a digest shows it: exact below 100, else to two significant figures (one
    memory entering or leaving a level of thousands changes nothing a person reads)."""
    if count < 100:
        return count
    step: int = 10 ** (len(str(count)) - 2)
    return (count + step // 2) // step * step


class LevelMembers:
    """Each urgency level's size and, for the listed levels, its most urgent members' ids."""

    def __init__(
        self,
        findings: Iterable[DecayFinding],
        carried: Mapping[str, FadingMark],
        listed: int,
    ) -> None:
        # Keyed by the level's value: a StrEnum hashes and compares as its string, so the
        # run state's marks (plain strings) need no conversion, one call each for 44k. The
        # carried ones are counted in C (map, Counter) and only the listed levels' go
        # through Python: this runs over every fading memory of the store.
        counts = Counter(map(itemgetter(0), carried.values()))
        found: dict[str, list[tuple[float, str]]] = {u.value: [] for u in Urgency}
        for f in findings:
            urgency, key = f.mark
            found[urgency].append((key, f.memory_id))
        self.count = {u: counts[u.value] + len(found[u.value]) for u in Urgency}
        self.top: dict[Urgency, list[str]] = {u: [] for u in Urgency}
        for u in LISTED:
            level = u.value
            entries = [(k, i) for i, (v, k) in carried.items() if v == level] + found[level]
            self.top[u] = [i for _, i in heapq.nsmallest(listed, entries)]


class DecayDigests:
    """The digest issues of one tracker under one analyzer config."""

    def __init__(self, tracker: IssueTracker, config: DecayAnalyzerConfig) -> None:
        self.tracker = tracker
        self.config = config

    def sync(
        self,
        levels: LevelMembers,
        issues: Iterable[IssueView],
        finding_of: Callable[[str], DecayFinding | None],
        counts: Counter[str],
        digests: list[tuple[str, str, int]],
        now: float,
    ) -> dict[Urgency, str]:
        """Each level's digest in step with ``levels`` (``issues``: the tracker's digests);
        returns the digest issue of each level with members. ``finding_of`` makes a listed
        memory's finding (scored now) when its digest is written."""
        known = self._one_per_level(issues, counts)
        ids: dict[Urgency, str] = {}
        for level in Urgency:
            size, listed = levels.count[level], levels.top[level]
            issue = known.get(level.value)
            if not size:
                if issue is not None and issue.status != "closed":
                    self.tracker.close(issue.id, f"no fading memories of {level.value} urgency")
                    counts["digests_closed"] += 1
                continue
            if issue is None or issue.status == "closed" or not _shows(issue, size, listed):
                members = [f for f in map(finding_of, listed) if f is not None]
                fields = self._fields(level, size, members, now)
                if issue is None:
                    issue = self.tracker.create(
                        fields.pop("title"),
                        **fields,
                        dedupe_key=f"decay-digest:{level.value}",
                    )
                    counts["digests_opened"] += 1
                else:
                    issue = self.tracker.update(issue.id, status="open", **fields)
                    counts["digests_updated"] += 1
            ids[level] = issue.id
            digests.append((level.value, issue.id, size))
        return ids

    def _one_per_level(self, issues: Iterable[IssueView], counts: Counter[str]) -> dict[str, Any]:
        """The digest of each level; any other open one of the same level (two runs that
        raced, a copied tracker) is closed as its duplicate."""
        by_level: dict[str, list[IssueView]] = {}
        for issue in issues:
            by_level.setdefault(str(issue.metadata["digest"]), []).append(issue)
        out: dict[str, IssueView] = {}
        for level, found in by_level.items():
            # The open one the dedupe key holds first; else the first found.
            found.sort(key=lambda i: (i.status == "closed", i.id))
            out[level] = keep = found[0]
            for extra in found[1:]:
                if extra.status != "closed":
                    self.tracker.close(extra.id, f"duplicate of the {level} digest {keep.id}")
                    counts["digests_closed"] += 1
        return out

    def _fields(
        self, level: Urgency, size: int, members: list[DecayFinding], now: float
    ) -> dict[str, Any]:
        shown = about(size)
        count = f"{size}" if size < 100 else f"about {shown:,}"  # the same for 150 and 151
        return {
            "title": f"{count} fading {'memory' if size == 1 else 'memories'}, "
            f"{level.value} urgency",
            "description": (
                f"Memories whose decay score puts them at {level.value} urgency. "
                + (_listing(size, members, now) if level in LISTED else _not_listed())
                + f"\n\nThis digest is rewritten when what it shows changes and closed when no "
                f"memory is left at this level. The exact count is in the consolidation "
                f"report; every fading memory, scored: `{FULL_LIST}`."
            ),
            "labels": (LABEL_DECAY, f"urgency:{level.value}", DIGEST_LABEL),
            "priority": PRIORITY[level],
            "metadata": {
                "digest": level.value,
                "format": DIGEST_FORMAT,
                "urgency": level.value,
                "count": shown,
                "memory_ids": [f.memory_id for f in members],
                "updated_at": round(now, 3),
            },
        }


def _listing(size: int, members: list[DecayFinding], now: float) -> str:
    rest = size - len(members)
    which = f"The {len(members)} most urgent" if rest > 0 else "They are listed"
    more = f"\n- … and {rest:,} more" if rest > 0 else ""
    return (
        f"{which} in the order their scores fall (or fell) below the forget threshold, "
        f"earliest first; scores as of {_day(now)}:\n\n"
        + "\n".join(_line(f, now) for f in members)
        + f"{more}\n\nReinforce the ones worth keeping (touch_memory / observe_memory_usage)."
    )


def _not_listed() -> str:
    return (
        "None of them is at risk yet: each reaches high urgency first, whose digest lists the "
        "most urgent fading memories."
    )


def _shows(issue: IssueView, size: int, listed: list[str]) -> bool:
    """The issue already shows this: the same rounded count and the same listed memories."""
    meta: Mapping[str, Any] = issue.metadata
    return (
        meta.get("format") == DIGEST_FORMAT
        and meta.get("count") == about(size)
        and list(meta.get("memory_ids") or ()) == listed
    )


def _line(f: DecayFinding, now: float) -> str:
    if f.forget_at is None:
        when = "never below the forget threshold"
    elif f.forget_at <= now:
        when = f"below the forget threshold since {_day(f.forget_at)}"
    else:
        when = f"below the forget threshold on {_day(f.forget_at)}"
    return f"- {f.memory_id} score {f.score:.3f} ({when}), {f.action.value}: {f.preview}"


def _day(t: float) -> str:
    try:
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):  # past year 9999
        return "a date out of range"


__all__ = ["DIGEST_FORMAT", "DIGEST_LABEL", "DecayDigests", "LevelMembers", "about"]
