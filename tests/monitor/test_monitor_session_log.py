"""The per-session log: bounded, safe under concurrent hook processes, tolerant of torn lines."""

from __future__ import annotations

import multiprocessing as mp

from cortexgraph.activation.monitor import SessionLog, make_call


def _call(i: int):
    return make_call("Bash", {"command": f"echo {i}"}, {"stdout": str(i)}, ts=float(i))


def test_log_is_capped_and_keeps_the_newest(tmp_path):
    log = SessionLog(tmp_path, "s", cap=10)
    for i in range(55):
        with log.locked():
            got = log.append(_call(i), keep=3)
    assert [c.ts for c in got.calls] == [52.0, 53.0, 54.0]
    lines = log.path.read_text().splitlines()
    assert 10 <= len(lines) <= 20
    assert [c.ts for c in log.recent(2)] == [53.0, 54.0]


def test_a_torn_line_is_skipped(tmp_path):
    log = SessionLog(tmp_path, "s")
    with log.locked():
        log.append(_call(1), keep=5)
    with open(log.path, "ab") as fh:
        fh.write(b'{"ts": 2, "tool": "Ba')
    with log.locked():
        got = log.append(_call(3), keep=5)
    assert [c.ts for c in got.calls] == [1.0, 3.0]


def test_session_ids_cannot_escape_the_directory(tmp_path):
    log = SessionLog(tmp_path, "../../etc/passwd")
    assert log.path.parent == tmp_path / "sessions"


def _writer(directory: str, start: int) -> None:
    from pathlib import Path

    log = SessionLog(Path(directory), "shared", cap=1000)
    for i in range(start, start + 50):
        with log.locked():
            log.append(_call(i), keep=2)


def test_concurrent_processes_lose_no_calls(tmp_path):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), k * 100)) for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    log = SessionLog(tmp_path, "shared", cap=1000)
    assert sorted(c.ts for c in log.recent(1000)) == sorted(
        float(k * 100 + i) for k in range(3) for i in range(50)
    )
