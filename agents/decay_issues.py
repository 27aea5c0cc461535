"""The tracker side of a decay run: digest issues per urgency level (decay_digests.py) and
per-memory issues.

Kept in step with the findings run after run (opened, rewritten, closed, reopened), apart from
the analyzer's scoring and gc (decay_analyzer.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace

from cortexgraph.agents.common import LABEL_DECAY, short, snippet
from cortexgraph.agents.decay_digests import DecayDigests, LevelMembers
from cortexgraph.agents.decay_findings import (
    DecayAnalyzerConfig,
    DecayFinding,
    FadingMark,
    Urgency,
)
from cortexgraph.agents.protocols import IssueTracker, IssueView
from cortexgraph.storage.models import MemoryStatus
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
        carried: Mapping[str, FadingMark] | None = None,
        make: Callable[[str], DecayFinding | None] | None = None,
    ) -> list[DecayFinding]:
        """Digests per urgency level, and (if asked) one issue per high-urgency memory.

        ``carried`` (an incremental run): marks of fading memories outside its scope, by id;
        counted in their digests as before, their issues left as they are. ``make`` turns
        one into its finding when a digest lists it.

        Per-memory issues are keyed by memory (dedupe key ``decay:<id>``), so re-runs never
        duplicate them; one whose memory is no longer fading badly (used again, promoted,
        merged, archived, deleted) is closed, and reopened if the memory fades again. Issues
        opened by earlier runs keep following their memories when ``memory_issues`` is off.
        """
        known: dict[str, IssueView] = {}
        digest_issues: list[IssueView] = []
        for i in self.tracker.query(labels=(LABEL_DECAY,)):
            if i.metadata.get("digest"):
                digest_issues.append(i)
            else:
                known[str(i.metadata.get("memory_id"))] = i
        live = {f.memory_id: f for f in findings if f.memory_id not in collected}
        carried = carried or {}
        levels = LevelMembers(live.values(), carried, self.config.digest_max_lines)

        def finding_of(memory_id: str) -> DecayFinding | None:
            found = live.get(memory_id)
            if found is None and make is not None:
                found = make(memory_id)
            return found

        digest_ids = DecayDigests(self.tracker, self.config).sync(
            levels, digest_issues, finding_of, counts, digests, now
        )
        out: list[DecayFinding] = []
        # A carried memory's issue stays as the last run left it (no bar crossed since).
        urgent: set[str] = set(carried) if known else set()
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


def _with_issue(finding: DecayFinding, issue_id: str) -> DecayFinding:
    return replace(finding, issue_id=issue_id)


__all__ = ["DecayIssues"]
