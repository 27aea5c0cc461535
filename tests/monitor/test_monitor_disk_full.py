"""The behaviour monitor's session log on a full disk (the kernel's file-size limit, as in
tests/storage/test_storage_disk_full.py): a tool call that could not be recorded whole leaves
no cut line, which used to swallow the next call's line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from child_env import run_with_file_size_limit

from cortexgraph.activation.monitor import SessionLog

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")


def test_a_call_that_runs_out_of_space_costs_no_later_call(tmp_path: Path) -> None:
    out = run_with_file_size_limit(
        """
        from cortexgraph.activation.monitor import SessionLog
        from cortexgraph.activation.monitor.calls import ToolCall
        log = SessionLog(Path(sys.argv[1]), "s1")
        with log.locked():
            log.append(ToolCall(1.0, "Bash", "pytest", target="pytest"), keep=10)
            room_for(log.path, 30)
            try:
                log.append(ToolCall(2.0, "Bash", "x" * 500, target="lost"), keep=10)
                refused = ""
            except OSError as e:
                refused = e.__class__.__name__
            unlimited()
            log.append(ToolCall(3.0, "Bash", "ls", target="ls"), keep=10)
        print(json.dumps({"refused": refused}))
        """,
        str(tmp_path),
    )
    assert out["refused"]
    calls = SessionLog(tmp_path, "s1").recent(10)
    assert [c.target for c in calls] == ["pytest", "ls"]
