"""An incremental run whose gc acts after runs whose gc did not (issue 32).

The deployments run the whole pipeline hourly with gc off and decay alone nightly with gc
archiving (prefect.yaml). A memory that fell below the forget threshold before the last hourly
run was judged there, left alone (gc off) and listed fading: the nightly run must archive it as
a full run with gc archiving does, though nothing changed since.
"""

from __future__ import annotations

from agents_helpers import NOW, add
from fakes import RecordingSink

from cortexgraph.agents import incremental
from cortexgraph.agents.decay_findings import DecayAnalyzerConfig, GcMode
from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.agents.pipeline import Pipeline, PipelineConfig, run_agents
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.decay import DAY


def _pipeline(store, tracker, gc: GcMode) -> Pipeline:
    config = PipelineConfig(decay=DecayAnalyzerConfig(decay=store.config.decay, gc=gc))
    return Pipeline(store, sink=RecordingSink(), tracker=tracker, config=config)


def test_gc_archives_what_the_last_run_left_below_the_forget_threshold():
    store, tracker = InMemoryStore(), InMemoryIssueTracker()
    gone = add(store, "the old parking receipt", age_days=120)  # long below forget
    add(store, "We deploy on Tuesdays.", age_days=1)
    hourly = _pipeline(store, tracker, GcMode.OFF)
    changes = incremental.begin(hourly, None, NOW)
    report = run_agents(hourly, now=NOW, scope=hourly.scope)
    assert report.reports["decay"].collected == ()  # gc off: judged, left alone
    state = incremental.state_after(hourly, changes, report, NOW)

    later = NOW + DAY / 4
    full = run_agents(_pipeline(store, tracker, GcMode.ARCHIVE), now=later, dry_run=True)
    assert full.reports["decay"].collected == (gone.id,)

    nightly = _pipeline(store, tracker, GcMode.ARCHIVE)
    incremental.begin(nightly, state, later)
    assert nightly.scope is not None and not nightly.scope.ids  # nothing changed since
    report = run_agents(nightly, now=later, agents=["decay"], scope=nightly.scope)
    assert report.reports["decay"].collected == (gone.id,)
    assert store.get(gone.id).status == "archived"
