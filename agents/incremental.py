"""Incremental runs end to end: the scope a run starts with and the state it leaves.

``begin`` compares the store with the last run's state (agents.changes.ChangeTracker) and sets
``Pipeline.scope``; ``state_after`` is what to keep for the next run, taken after the run's own
writes (merges, promotions, gc, entities found) so they do not count as changes next time. The
file itself is the shell's (cortexgraph.run_state): agents read and write no files.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cortexgraph.agents.changes import ChangeTracker
from cortexgraph.agents.decay_findings import DecayReport
from cortexgraph.agents.pipeline import Pipeline, PipelineReport
from cortexgraph.storage.decay import decay_thresholds
from cortexgraph.storage.protocol import WriteLog


def begin(
    pipeline: Pipeline, previous: Mapping[str, Any] | None, now: float, *, full: bool = False
) -> ChangeTracker:
    """Set ``pipeline.scope`` for this run (None: full, asked for or without a last state)."""
    cfg = pipeline.decay.config
    changes = ChangeTracker(
        cfg.decay, decay_thresholds(cfg.decay, cfg.high_below, cfg.medium_below)
    )
    scope = changes.scope(pipeline.decay.store.list(), None if full else previous, now)
    pipeline.scope = scope
    return changes


def state_after(
    pipeline: Pipeline,
    changes: ChangeTracker,
    report: PipelineReport,
    now: float,
    writes: WriteLog | None = None,
) -> dict[str, Any]:
    """The state the next run compares with. ``writes``: what the run wrote itself, recorded
    from ``begin`` on (``MemoryStore.recording_writes``); what others wrote meanwhile stays
    changed for the next run. None: the caller cannot tell, every change counts as the run's."""
    changes.refresh(pipeline.decay.store.list(), now, writes)
    decay = report.reports.get("decay")
    marks: dict[str, tuple[str, float]]
    if isinstance(decay, DecayReport) and not decay.skipped:
        gone = set(decay.collected)
        marks = {f.memory_id: f.mark for f in decay.findings if f.memory_id not in gone}
        marks.update(decay.carried)
        return changes.state(now, marks, marks)
    if pipeline.scope is None:
        return changes.state(now, (), {})
    last = pipeline.scope.marks  # decay did not run, or found nothing to do: its word stands
    fading = pipeline.scope.fading
    return changes.state(now, fading, {i: last[i] for i in fading if i in last})


__all__ = ["begin", "state_after"]
