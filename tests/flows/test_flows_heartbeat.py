"""An in-process run sends its flow run's heartbeats itself and stops them with the run
(flows.heartbeat): Prefect's own heartbeat thread, which a sync flow's engine joins at the end
of every run (up to 1 s of nothing), is off for it. Runs that Prefect starts keep Prefect's.

Through the flow on the session's Prefect test server, on the demo store, without embeddings.
"""

from __future__ import annotations

import threading
import time

import pytest

from cortexgraph.flows.consolidation import RunOptions, consolidate, run_pipeline
from cortexgraph.flows.heartbeat import HEARTBEAT_EVENT, THREAD_NAME
from cortexgraph.settings import load_settings

NOW = 1_760_000_000.0 + 3600


def _settings(store_dir, vault):
    return load_settings(
        storage_path=store_dir, ltm_vault_path=vault, beads_enabled=False, enable_embeddings=False
    )


def _heartbeats_seen() -> tuple[list[int | None], list[bool], list[str]]:
    """A step listener that notes, inside the flow's body, Prefect's heartbeat setting, whether
    the body's heartbeat thread runs, and the flow run's id."""
    from prefect.context import FlowRunContext
    from prefect.settings import get_current_settings

    prefects: list[int | None] = []
    ours: list[bool] = []
    runs: list[str] = []

    def on_step(name, report, seconds):
        prefects.append(get_current_settings().flows.heartbeat_frequency)
        ours.append(any(t.name == THREAD_NAME for t in threading.enumerate()))
        context = FlowRunContext.get()
        runs.append(str(context.flow_run.id) if context and context.flow_run else "")

    on_step.seen = (prefects, ours, runs)  # type: ignore[attr-defined]
    return on_step  # type: ignore[return-value]


def _our_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


def test_an_in_process_run_sends_its_own_heartbeats_and_stops_them(prefect_harness, demo_dirs):
    store_dir, vault = demo_dirs
    on_step = _heartbeats_seen()
    run_pipeline(
        _settings(store_dir, vault), RunOptions(now=NOW, agents=("decay",), on_step=on_step)
    )
    prefects, ours, runs = on_step.seen
    assert prefects == [None]  # Prefect's thread (joined in 1 s steps) is off for the run
    assert ours == [True]  # the body's is on
    assert not _our_threads()  # and ended with the run
    _assert_heartbeat_reached_the_server(runs[0])


def _assert_heartbeat_reached_the_server(flow_run_id: str) -> None:
    """The run's heartbeat event, as an automation that detects crashed runs reads it."""
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter
    from prefect.events.worker import EventsWorker

    EventsWorker.drain_all()  # events are sent in the background
    wanted = EventFilter(
        event=EventNameFilter(name=[HEARTBEAT_EVENT]),
        resource=EventResourceFilter(id=[f"prefect.flow-run.{flow_run_id}"]),
    )
    with get_client(sync_client=True) as client:
        for _ in range(60):  # the server stores events in batches
            events = client.read_events(filter=wanted, limit=50).events
            if events:
                break
            time.sleep(0.5)
    assert events, "no heartbeat event for the run"
    assert {r.role for r in events[0].related} >= {"flow"}


def test_a_user_who_turned_heartbeats_off_gets_none(prefect_harness, demo_dirs):
    from prefect.settings import temporary_settings

    store_dir, vault = demo_dirs
    on_step = _heartbeats_seen()
    with temporary_settings(updates={"flows.heartbeat_frequency": None}):
        run_pipeline(
            _settings(store_dir, vault), RunOptions(now=NOW, agents=("decay",), on_step=on_step)
        )
    prefects, ours, _ = on_step.seen
    assert prefects == [None] and ours == [False]


@pytest.mark.parametrize("seconds", [45])
def test_a_run_prefect_starts_keeps_prefects_own_heartbeats(prefect_harness, demo_dirs, seconds):
    from prefect.settings import temporary_settings

    store_dir, vault = demo_dirs
    on_step = _heartbeats_seen()
    with temporary_settings(updates={"flows.heartbeat_frequency": seconds}):
        # as a deployment's worker calls it: the engine, not run_pipeline
        state = consolidate(
            storage_path=str(store_dir),
            vault_path=str(vault),
            agents=["decay"],
            use_embeddings=False,
            now=NOW,
            on_step=on_step,
            return_state=True,
        )
    assert state.is_completed()
    prefects, ours, _ = on_step.seen
    assert prefects == [seconds] and ours == [False]
