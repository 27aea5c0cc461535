"""Behaviour-monitor benchmark: detection on recorded loop sessions, false positives on
recorded legitimate sessions, and the per-call latency of "add a call and check all patterns".

    python bench/monitor_bench.py [--calls 2000]

Latency is measured in-process (SessionLog append under the file lock + all detectors + the
state write), which is what the 10 ms p95 target is about; the baseline in the same run is the
bare locked append of one JSON line, so the ratio shows what detection costs on top of I/O.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cortexgraph.activation.monitor import Monitor, SessionLog, load_pattern_set, make_call  # noqa: E402
from cortexgraph.activation.monitor.replay import load_session, replay  # noqa: E402

SESSIONS = ROOT / "tests" / "monitor" / "sessions"


def detection_table(console: Console) -> None:
    patterns = load_pattern_set()
    table = Table(title="Recorded sessions")
    for col in ("session", "expect", "calls", "loop patterns fired", "alerts (stage@call)", "ok"):
        table.add_column(col)
    counts = {"loop": [0, 0], "quiet": [0, 0]}
    quiet_calls = quiet_alerts = 0
    for path in sorted(SESSIONS.glob("*.json")):
        data = load_session(path)
        with tempfile.TemporaryDirectory() as d:
            r = replay(data, Monitor(patterns), Path(d))
        alerts = [
            f"{o.alert.pattern_id}:{o.alert.stage}@{i}"
            for i, o in enumerate(r.observations)
            if o.alert
        ]
        if r.expect == "loop":
            ok = set(r.expected_patterns) <= r.fired and bool(alerts)
        else:
            ok = not alerts
            quiet_calls += len(r.observations)
            quiet_alerts += len(alerts)
        counts[r.expect][0] += ok
        counts[r.expect][1] += 1
        table.add_row(
            r.name,
            r.expect,
            str(len(r.observations)),
            ", ".join(sorted(r.fired)),
            ", ".join(alerts),
            "yes" if ok else "[red]NO[/red]",
        )
    console.print(table)
    det, fp = counts["loop"], counts["quiet"]
    console.print(
        f"loop sessions detected: {det[0]}/{det[1]} ({det[0] / det[1]:.0%}); "
        f"quiet sessions with any alert: {fp[1] - fp[0]}/{fp[1]} "
        f"({(fp[1] - fp[0]) / fp[1]:.0%}); alerts per quiet call: "
        f"{quiet_alerts}/{quiet_calls}"
    )


def _stream(n: int) -> list:
    """A realistic mix from all recorded sessions, repeated to length n."""
    raws = []
    for path in sorted(SESSIONS.glob("*.json")):
        raws += load_session(path)["calls"]
    out, ts = [], 1_750_000_000.0
    for i in range(n):
        raw = raws[i % len(raws)]
        ts += raw.get("dt", 10)
        out.append(
            make_call(
                raw["tool"],
                raw.get("input") or {},
                raw.get("response"),
                ts=ts,
                error=raw.get("error"),
            )
        )
    return out


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def latency_table(console: Console, n: int) -> None:
    patterns = load_pattern_set()
    calls = _stream(n)
    results = {}
    with tempfile.TemporaryDirectory() as d:
        base = SessionLog(Path(d) / "a", "bench")
        times = []
        for c in calls:
            t0 = time.perf_counter()
            with base.locked(), open(base.path, "ab") as fh:
                fh.write(json.dumps(c.to_json()).encode() + b"\n")
            times.append(time.perf_counter() - t0)
        results["baseline: locked append only"] = times
        monitor = Monitor(patterns)
        log = SessionLog(Path(d) / "b", "bench")
        times = []
        for c in calls:
            t0 = time.perf_counter()
            monitor.observe(log, c, "bench")
            times.append(time.perf_counter() - t0)
        results["monitor.observe (append + 4 detectors + state)"] = times
        raw = load_session(SESSIONS / "loop-ci-push-loop.json")["calls"][3]
        t0 = time.perf_counter()
        for _ in range(n):
            make_call(raw["tool"], raw["input"], None, ts=1.0, error=raw["error"])
        make_ms = (time.perf_counter() - t0) / n * 1000
    table = Table(title=f"Per-call latency over {n} calls (ms)")
    for col in ("operation", "p50", "p95", "p99", "max", "x baseline p95"):
        table.add_column(col, justify="right")
    base_p95 = _pct(results["baseline: locked append only"], 0.95)
    for name, ts in results.items():
        ms = [t * 1000 for t in ts]
        table.add_row(
            name,
            f"{statistics.median(ms):.2f}",
            f"{_pct(ms, 0.95):.2f}",
            f"{_pct(ms, 0.99):.2f}",
            f"{max(ms):.2f}",
            f"{_pct(ts, 0.95) / base_p95:.1f}",
        )
    table.add_row("make_call (normalise one failing Bash call)", f"{make_ms:.3f}", "", "", "", "")
    console.print(table)
    p95 = _pct(results["monitor.observe (append + 4 detectors + state)"], 0.95) * 1000
    console.print(f"target p95 < 10 ms: {'met' if p95 < 10 else 'NOT met'} ({p95:.2f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    console = Console(width=150)
    detection_table(console)
    latency_table(console, args.calls)


if __name__ == "__main__":
    main()
