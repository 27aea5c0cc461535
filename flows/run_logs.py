"""What a consolidation flow run says in its Prefect log besides its report: the agents' own
log lines, and the misspelt settings a deployment's worker was started with."""

from __future__ import annotations

import logging

from prefect import get_run_logger

AGENT_LOGGER = "cortexgraph.agents"  # the agents' loggers are getLogger(__name__) below it


def route_agent_logs() -> None:
    """What PREFECT_LOGGING_EXTRA_LOGGERS=cortexgraph.agents does, for runs that did not set
    it (a worker started without prefect.yaml's environment)."""
    from prefect.logging.handlers import APILogHandler

    logger = logging.getLogger(AGENT_LOGGER)
    if not any(isinstance(h, APILogHandler) for h in logger.handlers):
        logger.addHandler(APILogHandler())
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)


def name_unknown_env() -> None:
    """A deployment's run starts in a process of Prefect's worker, not in one of our programs,
    which name a misspelt CORTEXGRAPH_* variable on stderr where they start: the run's log
    names it instead (else a typo in the worker's environment, the store's path say, passes
    silently and the run works on the default store). In-process runs: their program did."""
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is None or context.flow_run is None or context.flow_run.deployment_id is None:
        return
    from cortexgraph.settings_env import unknown_env_warnings

    for line in unknown_env_warnings():
        get_run_logger().warning(line)


__all__ = ["AGENT_LOGGER", "name_unknown_env", "route_agent_logs"]
