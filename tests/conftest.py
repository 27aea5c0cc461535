"""Session-wide test settings: quiet, offline, and kind to a 2-core machine.

The suite runs on two xdist workers (``-n auto --dist loadgroup`` in pyproject.toml); tests
that share a module-scoped fixture stay on one worker (``pytest_collection_modifyitems``), so
an expensive fixture is built once. Each worker starts at most one Prefect server, the
``prefect_harness``, and hands it to the processes its tests start (``PREFECT_API_URL``).
Every Prefect server the tests start opens a copy of one database migrated once per session
(``prefect_template``, tests/prefect_db.py), not an empty one it would migrate itself.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from cortexgraph.process_env import prepare_process

# Before any test imports torch or prefect: two cores collapse with more threads than that, and
# a loaded CI machine wants more time for Prefect's temporary server than the CLI default.
for key, value in {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    # An MCP server a test runs reads no entities in a child after its saves (spaCy's seconds
    # of CPU, and writes the test did not ask for) unless the test is about that.
    "CORTEXGRAPH_ENTITY_READING_AFTER_SAVES": "false",
}.items():
    os.environ.setdefault(key, value)
# The rest is what every cortexgraph process sets where it starts (offline hubs, no telemetry,
# agents' logs local outside flow runs): tests run the way the product runs.
prepare_process()

# Property tests: a fixed example budget and no per-example deadline (a loaded machine would
# fail the 200 ms default on a slow example, not on a wrong one). "ci" is the default;
# HYPOTHESIS_PROFILE=deep runs ten times as many examples. A test that names max_examples keeps
# its own number (those left name 40-60, for examples that each open a store or a git repo).
CI_EXAMPLES = 50
settings.register_profile(
    "ci",
    max_examples=CI_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("deep", parent=settings.get_profile("ci"), max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.hookimpl(tryfirst=True)  # the groups are marked before xdist's own hook reads them
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that share a module-scoped fixture of ours run on the same xdist worker (the
    fixture is built once, not once per worker); ``--dist loadgroup`` spreads the rest.

    Under xdist the slow work is handed out first: the scheduler gives out its units (a group,
    or one test) in collection order (``--no-loadscope-reorder``), and a slow unit handed out
    last keeps one worker busy while the other has nothing left to do."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or item.get_closest_marker("xdist_group"):
            continue
        shared = any(
            defs[-1].scope == "module" and defs[-1].baseid
            for defs in info.name2fixturedefs.values()
        )
        if shared:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    if os.environ.get("PYTEST_XDIST_WORKER"):  # -n0 keeps the files' order
        _name_groups(items)
        items[:] = _slow_units_first(items)


def _name_groups(items: list[pytest.Item]) -> None:
    """What ``--dist loadgroup`` does on a worker, done here: the group's name appended to the
    test's id (``path::test@group``), which is how the scheduler learns the group. xdist 3.8
    writes it to ``item._nodeid``, which pytest 9 no longer reads (its id is ``item._id``):
    without this every test was its own unit, the two tests sharing the packaging module's
    wheel built it at once in one build/ folder, and each module fixture was built per worker."""
    for item in items:
        group = item.get_closest_marker("xdist_group")
        if group and group.args and _unit(item.nodeid) == item.nodeid:
            item._id = type(item._id).parse(f"{item.nodeid}@{group.args[0]}")


def _slow_units_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """Units with a ``slow`` test (real servers, processes, models) first, then the others
    largest first (xdist's own order), each in collection order otherwise. Every worker
    collects the same items, so every worker sorts them the same way."""
    sizes: dict[str, int] = {}
    slow: set[str] = set()
    for item in items:
        unit = _unit(item.nodeid)
        sizes[unit] = sizes.get(unit, 0) + 1
        if item.get_closest_marker("slow"):
            slow.add(unit)
    return sorted(
        items, key=lambda item: (_unit(item.nodeid) not in slow, -sizes[_unit(item.nodeid)])
    )


def _unit(nodeid: str) -> str:
    """The scheduler's unit of a test: its group's name after an ``@`` (one inside a
    parameter's brackets is part of the parameter), else the test itself."""
    if nodeid.rfind("@") > nodeid.rfind("]"):
        return nodeid.rsplit("@", 1)[1]
    return nodeid


@pytest.fixture(scope="session")
def prefect_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Prefect database at the head revision, migrated once for the session and shared by
    the xdist workers (tests/prefect_db.py): a test's own Prefect server starts on a copy
    (``copy_database``) instead of migrating an empty one."""
    from prefect_db import migrated_template

    base = tmp_path_factory.getbasetemp()
    # xdist: each worker's temp folder sits in the session's; the template goes beside them.
    return migrated_template(base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base)


@pytest.fixture(scope="session")
def prefect_harness(prefect_template: Path):
    """One Prefect test server for the session (per xdist worker): the flow tests', the 1.x
    Scheduler's, and that of every process a test starts after asking for it, through
    ``PREFECT_API_URL`` in this process's environment (tests/child_env.py passes it on).
    Its database is a copy of ``prefect_template``. Yields the API URL. A child that must
    start a server of its own removes the variable."""
    import tempfile
    from unittest import mock

    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness
    from prefect_db import copy_database

    seeded: list[Path] = []

    def folder_with_the_database() -> str:
        # The harness makes a temporary folder and opens ``prefect-test.db`` in it.
        folder = Path(tempfile.mkdtemp(prefix="prefect-harness-"))
        seeded.append(copy_database(prefect_template, folder / "prefect-test.db"))
        return str(folder)

    before = os.environ.get("PREFECT_API_URL")
    harness = prefect_test_harness(server_startup_timeout=120)
    with mock.patch("prefect.testing.utilities.mkdtemp", folder_with_the_database):
        harness.__enter__()
    try:
        assert seeded, "prefect_test_harness no longer makes its folder with mkdtemp"
        url = PREFECT_API_URL.value()
        os.environ["PREFECT_API_URL"] = url
        yield url
    finally:
        if before is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = before
        harness.__exit__(None, None, None)
