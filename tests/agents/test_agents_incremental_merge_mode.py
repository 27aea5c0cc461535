"""A run that merges after one that only previewed (issue 32).

``--merge-mode preview`` (or ``link``) is chosen per run and is no part of the configuration
key: the next run in apply mode must merge what the preview found, as a full run does, though
those memories did not change. A beads tracker keeps the previewed cluster's issue open for it;
with issue tracking disabled the tracker lives in the run's process only, and the next run
starts from nothing but the run state.
"""

from __future__ import annotations

import pytest
from agents_helpers import NOW, add
from fakes import HashingEmbedder, RecordingSink

from cortexgraph.agents import incremental
from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.agents.pipeline import Pipeline, PipelineConfig, run_agents
from cortexgraph.agents.semantic_merge import MergeConfig, MergeMode
from cortexgraph.storage import InMemoryStore


def _pipeline(store, mode: MergeMode) -> Pipeline:
    config = PipelineConfig(merge=MergeConfig(mode=mode))
    # A new in-memory tracker each run: issue tracking disabled, one process per run.
    return Pipeline(
        store,
        embedder=HashingEmbedder(),
        sink=RecordingSink(),
        tracker=InMemoryIssueTracker(),
        config=config,
    )


def _merged(report):
    return {frozenset(o.source_ids) for o in report.reports["merge"].outcomes if o.merged_id}


@pytest.mark.parametrize("first", [MergeMode.PREVIEW, MergeMode.LINK])
def test_apply_after_a_preview_merges_what_it_found(first):
    store = InMemoryStore()
    add(store, "The ledger uses PostgreSQL 16.", entities=["ledger", "PostgreSQL"], age_days=2)
    add(store, "the ledger uses postgresql 16!", entities=["ledger", "PostgreSQL"], age_days=1)
    add(store, "We deploy on Tuesdays.", age_days=1)
    preview = _pipeline(store, first)
    changes = incremental.begin(preview, None, NOW)
    report = run_agents(preview, now=NOW, scope=preview.scope)
    assert not _merged(report)
    state = incremental.state_after(preview, changes, report, NOW)

    later = NOW + 3600
    full = run_agents(_pipeline(store, MergeMode.APPLY), now=later, dry_run=True)
    apply = _pipeline(store, MergeMode.APPLY)
    incremental.begin(apply, state, later)
    again = run_agents(apply, now=later, dry_run=True, scope=apply.scope)
    assert {o.cluster_id for o in full.reports["merge"].outcomes} == {
        o.cluster_id for o in again.reports["merge"].outcomes
    }
    assert full.reports["merge"].outcomes
