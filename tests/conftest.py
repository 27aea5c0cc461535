"""Session-wide test settings: quiet, offline, and kind to a 2-core machine."""

from __future__ import annotations

import os

import pytest

from cortexgraph.process_env import prepare_process

# Before any test imports torch or prefect: two cores collapse with more threads than that, and
# a loaded CI machine wants more time for Prefect's temporary server than the CLI default.
for key, value in {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
}.items():
    os.environ.setdefault(key, value)
# The rest is what every cortexgraph process sets where it starts (offline hubs, no telemetry,
# agents' logs local outside flow runs): tests run the way the product runs.
prepare_process()


@pytest.fixture(scope="session")
def prefect_harness():
    """One Prefect test server for the session (the flow tests and the 1.x Scheduler's)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield
