"""Incremental runs end to end: the scope a run starts with and the state it leaves.

``begin`` compares the store with the last run's state (agents.changes.ChangeTracker) and sets
``Pipeline.scope``; ``state_after`` is what to keep for the next run, taken after the run's own
writes (merges, promotions, gc, entities found) so they do not count as changes next time. The
file itself is the shell's (cortexgraph.run_state): agents read and write no files.

``untouched_report`` is the report of a run the shell answered without opening the store: the
files were as the last run left them and no decay crossing had come (``run_state.unchanged_since``),
so every agent would have found nothing (each reports its own report type, empty, ``skipped``);
``ends_clean`` says when a run may leave the record that makes this possible.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from cortexgraph.agents.changes import ChangeTracker
from cortexgraph.agents.cluster_report import ClusterReport
from cortexgraph.agents.decay_findings import DecayAction, DecayReport, GcMode
from cortexgraph.agents.decision_key import pipeline_key
from cortexgraph.agents.entity_standing import EntityStanding
from cortexgraph.agents.ltm_promoter import PromoteReport
from cortexgraph.agents.pipeline import (
    Pipeline,
    PipelineConfig,
    PipelineReport,
    StepListener,
    gc_frozen,
)
from cortexgraph.agents.relationship_report import RelationshipReport
from cortexgraph.agents.run_scope import RunScope
from cortexgraph.agents.semantic_merge import MergeMode, MergeReport
from cortexgraph.storage.decay import decay_thresholds
from cortexgraph.storage.protocol import WriteLog


def begin(
    pipeline: Pipeline,
    previous: Mapping[str, Any] | None,
    now: float,
    *,
    full: bool = False,
    written: Callable[[], Collection[str] | None] | None = None,
    embeddings: bool | None = None,
) -> ChangeTracker:
    """Set ``pipeline.scope`` for this run (None: full, asked for or without a last state).
    ``written``: asked after the store is listed, the only memories written since the last
    state (None: compare every memory; ChangeTracker.scope). ``embeddings``: whether the run
    wants them (recorded: ChangeTracker.embeddings)."""
    cfg = pipeline.decay.config
    changes = ChangeTracker(
        cfg.decay, decay_thresholds(cfg.decay, cfg.high_below, cfg.medium_below)
    )
    changes.config_key = pipeline_key(pipeline)
    changes.embeddings = embeddings
    if not full and previous is not None and previous.get("config") != changes.config_key:
        # The last run judged under other thresholds (or did not record them): its word on an
        # unchanged memory no longer stands (agents.decision_key).
        previous = None
        changes.full_because = "full run: the agents' configuration changed since the last run"
    elif not full and previous is not None and now < _clock(previous):
        # The last run judged every unchanged memory at a later moment than this one.
        previous = None
        changes.full_because = "full run: the clock is before the last run's"
    memories = pipeline.decay.store.list()
    only = None if full or written is None or previous is None else written()
    with gc_frozen():  # a full collection here walked the open store (0.37 s at 100k)
        scope = changes.scope(memories, None if full else previous, now, only)
    pipeline.scope = scope
    return changes


def _clock(previous: Mapping[str, Any]) -> float:
    """The last run's clock (-inf where not recorded)."""
    since = previous.get("now")
    return float(since) if isinstance(since, int | float) else float("-inf")


def state_after(
    pipeline: Pipeline,
    changes: ChangeTracker,
    report: PipelineReport,
    now: float,
    writes: WriteLog | None = None,
    files: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The state the next run compares with. ``writes``: what the run wrote itself, recorded
    from ``begin`` on (``MemoryStore.recording_writes``); what others wrote meanwhile stays
    changed for the next run. None: the caller cannot tell, every change counts as the run's.
    ``files``: what the store files were after the run's last write, taken before this call
    reads the store again; kept as ``state["files"]`` only when the run ``ends_clean``."""
    with gc_frozen():  # as in ``begin``: the store is not walked for the rows made here
        state = _state_after(pipeline, changes, report, now, writes)
    state["config"] = changes.config_key
    state["gc_settled"] = _gc_settled(pipeline, report)
    state["unmerged"] = sorted(_unmerged_after(pipeline, report))
    state["similarity"] = _similarity_after(pipeline, report)
    state["embeddings"] = changes.embeddings
    standing = _standing_after(pipeline, report)
    if standing is not None:
        state["entity_standing"] = standing.to_state()
    if files is not None and ends_clean(changes, report, pipeline):
        state["files"] = dict(files)
    return state


def _state_after(
    pipeline: Pipeline,
    changes: ChangeTracker,
    report: PipelineReport,
    now: float,
    writes: WriteLog | None,
) -> dict[str, Any]:
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


def _gc_settled(pipeline: Pipeline, report: PipelineReport) -> bool:
    """Whether this run leaves no memory its gc would take (RunScope.gc_settled): every gc
    candidate it judged was collected, and those it carried were settled before (or judged
    by this run, its gc acting: RunScope.gc_due)."""
    decay = report.reports.get("decay")
    scope = pipeline.scope
    if not isinstance(decay, DecayReport) or decay.skipped:
        return scope is not None and scope.gc_settled  # the last run's word stands
    collected = set(decay.collected)
    left = any(
        f.action is DecayAction.GC_CANDIDATE and f.memory_id not in collected
        for f in decay.findings
    )
    carried = scope is None or scope.gc_settled or decay.gc_mode is not GcMode.OFF
    return carried and not left


def _unmerged_after(pipeline: Pipeline, report: PipelineReport) -> frozenset[str]:
    """The memories of what this run's merge step found and did not merge (RunScope.unmerged):
    previewed, linked or failed clusters, and in a preview the related pairs it did not link;
    an apply run clustered the last runs' again, a run in another mode leaves them to it. Not
    a refused merge (the store's limits): it waits until one of its memories changes."""
    last = pipeline.scope.unmerged if pipeline.scope is not None else frozenset()
    merge = report.reports.get("merge")
    if not isinstance(merge, MergeReport) or merge.skipped:
        return last
    left = {
        i
        for o in merge.outcomes
        if o.status in ("previewed", "linked", "failed")
        for i in o.source_ids
    }
    if merge.mode is not MergeMode.APPLY:
        left |= last
    cluster = report.reports.get("cluster")
    if merge.mode is MergeMode.PREVIEW and isinstance(cluster, ClusterReport):
        left.update(i for p in cluster.related for i in (p.id1, p.id2))
    return frozenset(left)


def _similarity_after(pipeline: Pipeline, report: PipelineReport) -> str | None:
    """The similarity this run's cluster step judged by, or (skipped, or not run) the last."""
    cluster = report.reports.get("cluster")
    if isinstance(cluster, ClusterReport) and not cluster.skipped:
        return cluster.method
    return None if pipeline.scope is None else pipeline.scope.similarity


def _standing_after(pipeline: Pipeline, report: PipelineReport) -> EntityStanding | None:
    """The entities' standing this run's relations step judged by, or (skipped, or not run)
    the last one it was judged by: the next run compares with what was last judged."""
    relations = report.reports.get("relations")
    if isinstance(relations, RelationshipReport) and relations.standing is not None:
        return relations.standing
    return None if pipeline.scope is None else pipeline.scope.standing


def ends_clean(
    changes: ChangeTracker, report: PipelineReport, pipeline: Pipeline | None = None
) -> bool:
    """Whether the store files at the end of this run hold nothing its state does not account
    for, and it left nothing for a run after no change to do: no one else wrote to the store
    meanwhile (``ChangeTracker.refresh``), every merge issue it took up is closed (a
    failed, skipped or previewed one is taken up again by every run; a refused one waits for
    a person), and (``pipeline``
    given) its cluster step judged by the similarity its embedder gives (not TF-IDF for a
    model that failed to load: the next run judges again by the model) and its entity step
    left no memory unread (a full batch: the rest wait for the next run)."""
    merge = report.reports.get("merge")
    # A refused merge waits for a person: its issue stays open as it was, and a run after no
    # change would only be refused again.
    pending = isinstance(merge, MergeReport) and any(
        o.status not in ("merged", "linked", "refused") for o in merge.outcomes
    )
    if changes.others_wrote or pending:
        return False
    if pipeline is None:
        return True
    cluster = report.reports.get("cluster")
    fell_back = (
        isinstance(cluster, ClusterReport)
        and not cluster.skipped
        and cluster.method != pipeline.similarity
    )
    return not fell_back and not pipeline.relations.backlog


def skipped_reports(
    agents: Iterable[str], config: PipelineConfig, dry_run: bool, why: str
) -> dict[str, Any]:
    """Each agent's own report type, empty, with ``skipped`` saying ``why``: a caller reads
    ``reports["merge"].outcomes`` (none) of a run that opened nothing as of any other run."""
    gc = config.decay.gc if config.decay is not None else GcMode.OFF
    made: dict[str, Callable[[], Any]] = {
        "decay": lambda: DecayReport(dry_run, 0, 0, 0, (), 0, (), gc, skipped=why),
        "cluster": lambda: ClusterReport(
            dry_run, 0, "", "", config.cluster.link_threshold, 0, 0, (), 0, skipped=why
        ),
        "merge": lambda: MergeReport(dry_run, config.merge.mode, (), 0, skipped=why),
        "promote": lambda: PromoteReport(dry_run, 0, (), (), "", skipped=why),
        "relations": lambda: RelationshipReport(dry_run, 0, 0, (), 0, (), None, skipped=why),
    }
    return {name: made[name]() for name in agents}


def untouched_report(
    agents: Iterable[str],
    config: PipelineConfig,
    *,
    since: float,
    now: float,
    dry_run: bool,
    started: float,
    on_step: StepListener | None = None,
) -> PipelineReport:
    """The report of a run after no change, answered without the store: each agent's report
    skipped with the scope's "nothing changed since the last run at …" (``skipped_reports``);
    ``on_step`` told of each."""
    scope = RunScope(since, frozenset(), frozenset())
    reports = skipped_reports(agents, config, dry_run, scope.describe())
    if on_step is not None:
        for name, report in reports.items():
            on_step(name, report, 0.0)
    notes = ("store not opened: its files are as the last run left them, no crossing due",)
    return PipelineReport(
        dry_run,
        now,
        tuple(reports),
        reports,
        dict.fromkeys(reports, 0.0),
        time.perf_counter() - started,
        notes,
        scope,
    )


__all__ = ["begin", "ends_clean", "skipped_reports", "state_after", "untouched_report"]
