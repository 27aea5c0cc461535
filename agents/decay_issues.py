"""The tracker side of a decay run: digest issues per urgency level and per-memory issues.

Kept in step with the findings run after run (opened, rewritten, closed, reopened), apart from
the analyzer's scoring and gc (decay_analyzer.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from cortexgraph.agents.common import LABEL_DECAY, short, snippet
from cortexgraph.agents.decay_findings import (
    DecayAnalyzerConfig,
    DecayFinding,
    Urgency,
    urgency_of,
)
from cortexgraph.agents.protocols import IssueTracker, IssueView
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.protocol import MemoryStore


class DecayIssues:
    """The decay issues of one tracker, for one store under one analyzer config."""

    def __init__(
        self, tracker: IssueTracker, store: MemoryStore, config: DecayAnalyzerConfig
    ) -> None:
        self.tracker = tracker
        self.store = store
        self.config = config

    def sync(
        self,
        findings: list[DecayFinding],
        collected: set[str],
        counts: Counter[str],
        digests: list[tuple[str, str, int]],
        now: float,
        *,
        carried: Sequence[tuple[float, Memory]] = (),
        make: Callable[[Memory, float, float], DecayFinding] | None = None,
    ) -> list[DecayFinding]:
        """Digests per urgency level, and (if asked) one issue per high-urgency memory.

        ``carried`` (an incremental run): (score, memory) of fading memories outside its scope,
        by score; listed in their digests as before, their issues left as they are. ``make``
        turns one into its finding when a digest listing it is rewritten.

        Per-memory issues are keyed by memory (dedupe key ``decay:<id>``), so re-runs never
        duplicate them; one whose memory is no longer fading badly (used again, promoted,
        merged, archived, deleted) is closed, and reopened if the memory fades again. Issues
        opened by earlier runs keep following their memories when ``memory_issues`` is off.
        """
        known: dict[str, IssueView] = {}
        digest_issues: dict[str, IssueView] = {}
        for i in self.tracker.query(labels=(LABEL_DECAY,)):
            if i.metadata.get("digest"):
                digest_issues[str(i.metadata["digest"])] = i
            else:
                known[str(i.metadata.get("memory_id"))] = i
        live = [f for f in findings if f.memory_id not in collected]
        levels = _Members(live, carried, make, self.config, now)
        digest_ids = self._sync_digests(levels, digest_issues, counts, digests, now)
        out: list[DecayFinding] = []
        # A carried memory's issue stays as the last run left it (no bar crossed since).
        urgent: set[str] = {m.id for _, m in carried}
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
        levels: _Members,
        known: dict[str, IssueView],
        counts: Counter[str],
        digests: list[tuple[str, str, int]],
        now: float,
    ) -> dict[Urgency, str]:
        """One open digest per urgency level listing its memories; rewritten only when its
        memories changed, closed when the level is empty, reopened when it fills again."""
        ids: dict[Urgency, str] = {}
        for level in Urgency:
            memory_ids = levels.ids(level)
            issue = known.get(level.value)
            if not memory_ids:
                if issue is not None and issue.status != "closed":
                    self.tracker.close(issue.id, f"no fading memories of {level.value} urgency")
                    counts["digests_closed"] += 1
                continue
            if issue is None:
                fields = self._digest_fields(level, levels.findings(level), now)
                issue = self.tracker.create(
                    fields["title"],
                    description=fields["description"],
                    labels=fields["labels"],
                    priority=fields["priority"],
                    metadata=fields["metadata"],
                    dedupe_key=f"decay-digest:{level.value}",
                )
                counts["digests_opened"] += 1
            elif issue.status == "closed" or set(issue.metadata.get("memory_ids") or ()) != set(
                memory_ids
            ):
                # Its memories, not their order: scores move with time and, on the power-law
                # curve, overtake each other, so an order test rewrote (and committed) the
                # digests on every run, and an incremental run would have to score them all.
                fields = self._digest_fields(level, levels.findings(level), now)
                issue = self.tracker.update(issue.id, status="open", **fields)
                counts["digests_updated"] += 1
            ids[level] = issue.id
            digests.append((level.value, issue.id, len(memory_ids)))
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
                f"rewritten when its memories change (scores as of then) and closed when none "
                f"are left.\n\n" + "\n".join(lines)
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


class _Members:
    """The memories of each urgency level: this run's findings and the carried memories (by
    score and id, as a full run would list them); findings made of the carried ones only for
    a digest that is written."""

    def __init__(
        self,
        findings: Sequence[DecayFinding],
        carried: Sequence[tuple[float, Memory]],
        make: Callable[[Memory, float, float], DecayFinding] | None,
        config: DecayAnalyzerConfig,
        now: float,
    ) -> None:
        self._found = findings
        self._carried = carried
        self._make = make
        self._now = now
        self._level = {m.id: urgency_of(score, config) for score, m in carried}

    def _entries(self, level: Urgency) -> list[tuple[float, str, DecayFinding | Memory]]:
        entries: list[tuple[float, str, DecayFinding | Memory]] = [
            (f.score, f.memory_id, f) for f in self._found if f.urgency is level
        ]
        if self._carried:
            entries += [(s, m.id, m) for s, m in self._carried if self._level[m.id] is level]
            entries.sort(key=lambda e: (e[0], e[1]))
        return entries

    def ids(self, level: Urgency) -> list[str]:
        return [i for _, i, _ in self._entries(level)]

    def findings(self, level: Urgency) -> list[DecayFinding]:
        out = []
        for score, _, item in self._entries(level):
            if isinstance(item, DecayFinding):
                out.append(item)
            else:
                assert self._make is not None, "carried memories need a finding maker"
                out.append(self._make(item, score, self._now))
        return out


def _with_issue(finding: DecayFinding, issue_id: str) -> DecayFinding:
    return replace(finding, issue_id=issue_id)


__all__ = ["DecayIssues"]
