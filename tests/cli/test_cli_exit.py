"""How a program's process ends: its exit leaves the heap to the OS instead of walking it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from child_env import ROOT, child_env

# An exit handler registered before the program's own ones runs after them: it sees what the
# interpreter's shutdown will find.
_PROBE = textwrap.dedent(
    """
    import atexit, gc, sys
    atexit.register(lambda: print("frozen", gc.get_freeze_count(), file=sys.stderr))
    from cortexgraph.cli.consolidate import main
    sys.argv = ["cortexgraph-consolidate", "--storage-path", sys.argv[1], "--json", "status"]
    main()
    """
)


def test_the_consolidation_cli_exits_without_a_last_collection(tmp_path):
    """Every object alive at exit is frozen once Prefect's exit handlers have run, so the
    interpreter's shutdown skips the collector's passes over Prefect, pydantic and the store
    (0.3-0.45 CPU s of a run after no change); the command's output is whole."""
    (tmp_path / "store").mkdir()  # an empty store (a named one that is missing is refused)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child_env(),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) is None  # no run recorded yet: the output came through
    frozen = [line for line in done.stderr.splitlines() if line.startswith("frozen ")]
    assert frozen and int(frozen[-1].split()[1]) > 10_000
