"""What one agent looks at in an incremental run (``Pipeline.scope`` set, agents.run_scope).

Decay scores what changed or crossed a bar by time alone (and the last run's fading memories,
so its digests stay whole); the promoter looks only at those; relations pair only what
changed (and what an entity's changed standing makes relatable); the cluster detector links
the changed memories to their neighbours in the existing vectors. Similarity and entities do
not move with time. A full run (``scope=None``) is ``Pipeline._run``'s plain ``agent.run``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from cortexgraph.agents.decay_findings import DecayReport, GcMode
from cortexgraph.agents.semantic_merge import MergeMode

if TYPE_CHECKING:
    from cortexgraph.agents.pipeline import Pipeline


def run_scoped(pipeline: Pipeline, name: str, agent: Any, *, now: float, dry_run: bool) -> Any:
    """Run ``agent`` (the pipeline's step ``name``, not merge) over what changed."""
    scope = pipeline.scope
    assert scope is not None
    if name == "decay":
        gc = pipeline.decay.config.gc
        # What the last run judged fading and its gc left (gc off then, on now).
        due = scope.gc_due(now) if gc is not GcMode.OFF else frozenset()
        if scope.empty and gc is not GcMode.DELETE and not due:
            # Nothing changed and no score crossed a bar: every finding, digest and gc
            # decision is the last run's (only delete mode has a clock of its own, the
            # grace period of what gc archived).
            return DecayReport(
                dry_run,
                0,
                0,
                0,
                (),
                0,
                (),
                gc,
                skipped="nothing changed or crossed a decay bar: the last run's findings stand",
            )
        # The last run's fading memories outside the scope crossed no bar: their findings
        # stand, and they are only listed in their digests again.
        ids = scope.ids | due
        decayed = agent.run(
            now=now,
            dry_run=dry_run,
            scope=ids,
            carried=scope.fading - ids,
            marks=scope.marks,
        )
        if decayed.collected:
            # What gc archived left its entities' time chains: the relations step must
            # see it leave (agents.chain_gaps), as it sees a merge's sources leave.
            gone = frozenset(decayed.collected)
            pipeline.scope = replace(scope, changed=scope.changed | gone)
        return decayed
    if name == "promote":  # time alone can end a memory's claim to promotion
        return agent.run(now=now, dry_run=dry_run, scope=scope.ids)
    if name == "relations":
        if scope.removed:
            # A memory deleted since the last run left its entities' time chains with
            # its names, which no store keeps: the chains cannot be told apart, so every
            # pair is judged, as a full run (agents.chain_gaps).
            return pipeline.relations.run(now=now, dry_run=dry_run)
        # Also what an entity's changed standing makes relatable (agents.entity_standing).
        return pipeline.relations.run(
            now=now, dry_run=dry_run, scope=scope.changed, standing=scope.standing
        )
    # The cluster step. Similarity does not move with time: only what changed.
    if pipeline.judges_anew:
        # The last run judged by other vectors (TF-IDF, another model): every pair is
        # judged again, as a full run judges it.
        return agent.run(now=now, dry_run=dry_run)
    ids = scope.changed
    if pipeline.merge.config.mode is MergeMode.APPLY:
        # What earlier runs found and did not merge (a preview, links): found again.
        ids = ids | scope.unmerged
    # What left the active set since (archived, promoted, merged away) may let the
    # memories it kept apart cluster: left to the weekly full run, since finding them is
    # a neighbourhood of every departure (after a first consolidation, thousands: the
    # next +100 run's cluster step took 16 s against 1.9 for a full one).
    return agent.run(now=now, dry_run=dry_run, scope=ids)


__all__ = ["run_scoped"]
