"""Flow run heartbeats for in-process runs that stop when the run does.

While a flow runs, Prefect emits a ``prefect.flow-run.heartbeat`` event every
``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` seconds (180 by default). An automation that expects the
next one marks a run whose process died (kill -9, out of memory) as Crashed. Prefect sends them
from a thread that sleeps in 1 s steps, and a sync flow's engine joins that thread after the
run's final state is recorded. So every run of ``cortexgraph-consolidate`` waited up to 1 s
for nothing: 0.95 s of a 2.5 s run after no change, 0.5 s on average.

``run_pipeline`` therefore turns Prefect's heartbeat thread off for its own call
(``in_process_heartbeats``), and the flow's body sends the same event at the same frequency
(``flow_run_heartbeats``) from a thread that stops as soon as it is told to. A user who turned
heartbeats off gets none. Runs that Prefect starts itself (a deployment's worker, a direct call
of the flow) keep Prefect's own heartbeats: there the body sends none.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger(__name__)

HEARTBEAT_EVENT = "prefect.flow-run.heartbeat"
THREAD_NAME = "cortexgraph-flow-run-heartbeat"
MINIMUM_SECONDS = 30  # Prefect's own floor (prefect.flow_engine.MINIMUM_HEARTBEAT_INTERVAL)

# Set by in_process_heartbeats for the flow call it wraps: the seconds between heartbeats the
# flow's body sends. None: the body sends none (Prefect's own thread runs, or they are off).
_every: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "cortexgraph_heartbeat_seconds", default=None
)


@contextmanager
def in_process_heartbeats() -> Iterator[None]:
    """Around an in-process flow call: Prefect's heartbeat thread off, the body's on, at the
    frequency the user's Prefect settings give (off if they are off)."""
    from prefect.settings import get_current_settings, temporary_settings

    every = get_current_settings().flows.heartbeat_frequency
    if every is None:
        yield
        return
    token = _every.set(max(every, MINIMUM_SECONDS))
    try:
        with temporary_settings(updates={"flows.heartbeat_frequency": None}):
            yield
    finally:
        _every.reset(token)


@contextmanager
def flow_run_heartbeats() -> Iterator[None]:
    """In a flow's body: send the run's heartbeats until the body ends, if
    ``in_process_heartbeats`` asked for them (else nothing)."""
    from prefect.context import FlowRunContext
    from prefect.settings import get_current_settings

    every = _every.get()
    context = FlowRunContext.get()
    if (
        every is None
        or context is None
        or context.flow_run is None
        or get_current_settings().flows.heartbeat_frequency is not None  # Prefect sends them
    ):
        yield
        return
    resource, related = _event_template(context)
    stop = threading.Event()

    def beat() -> None:
        while not stop.is_set():
            try:
                from prefect.events import emit_event

                emit_event(event=HEARTBEAT_EVENT, resource=resource, related=related)
            except Exception:
                log.debug("a flow run heartbeat was not sent", exc_info=True)
            stop.wait(every)

    # The thread sees this context's settings (the API URL of run_pipeline's server): a new
    # thread's empty context would read the process's settings instead.
    thread = threading.Thread(
        target=contextvars.copy_context().run, args=(beat,), name=THREAD_NAME, daemon=True
    )
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2)  # at once, unless an event is being queued right now


def _event_template(context: Any) -> tuple[dict[str, str], list[Any]]:
    """The event's resource and related resources, as Prefect's own heartbeat names them
    (prefect.flow_engine.BaseFlowRunEngine._build_heartbeat_event_template): the run, its
    flow, its deployment, its tags."""
    from prefect import __version__
    from prefect.events.related import RelatedResource, tags_as_related_resources

    run = context.flow_run
    resource = {
        "prefect.resource.id": f"prefect.flow-run.{run.id}",
        "prefect.resource.name": run.name or "",
        "prefect.version": __version__,
    }
    related: list[Any] = []
    if run.flow_id:
        related.append(
            RelatedResource.model_validate(
                {
                    "prefect.resource.id": f"prefect.flow.{run.flow_id}",
                    "prefect.resource.role": "flow",
                    "prefect.resource.name": context.flow.name if context.flow else "",
                }
            )
        )
    if run.deployment_id:
        related.append(
            RelatedResource.model_validate(
                {
                    "prefect.resource.id": f"prefect.deployment.{run.deployment_id}",
                    "prefect.resource.role": "deployment",
                }
            )
        )
    related += tags_as_related_resources(set(run.tags or []))
    return resource, related


__all__ = ["HEARTBEAT_EVENT", "flow_run_heartbeats", "in_process_heartbeats"]
