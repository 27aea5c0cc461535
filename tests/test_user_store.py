"""cortexgraph.user_store: where every shell finds the tracker and the record of runs."""

from __future__ import annotations

import json
from pathlib import Path

from cortexgraph.settings import Settings
from cortexgraph.user_store import RUNS_FILE, last_run, record_run, tracker_location


class _Report:
    def __init__(self, agents: list[str]) -> None:
        self.agents = agents

    def summary_json(self) -> dict[str, object]:
        return {
            "agents": self.agents,
            "total_seconds": 1.5,
            "seconds": dict.fromkeys(self.agents, 0.5),
            "summaries": {a: f"{a} done" for a in self.agents},
            "notes": ["a note"],
        }


def test_the_last_readable_run_wins_and_a_torn_line_is_skipped(tmp_path: Path) -> None:
    assert last_run(tmp_path) is None
    record_run(tmp_path, _Report(["decay"]), finished=100.0)
    record_run(tmp_path, _Report(["decay", "cluster"]), finished=200.0)
    with (tmp_path / RUNS_FILE).open("a", encoding="utf-8") as f:
        f.write('{"finished_at": 300.0, "agen')  # a run cut off while writing
    last = last_run(tmp_path)
    assert last is not None
    assert last["finished_at"] == 200.0 and last["agents"] == ["decay", "cluster"]
    assert "reports" not in last and last["dry_run"] is False
    first = json.loads((tmp_path / RUNS_FILE).read_text(encoding="utf-8").splitlines()[0])
    assert first["summaries"] == {"decay": "decay done"}


def test_tracker_location_repo_then_setting_then_storage(tmp_path: Path) -> None:
    storage = tmp_path / "stm"
    assert tracker_location(Settings(storage_path=storage)) == (storage, False)
    configured = Settings(storage_path=storage, beads_repo=tmp_path / "repo")
    assert tracker_location(configured) == (tmp_path / "repo", True)
    assert tracker_location(configured, tmp_path / "cli") == (tmp_path / "cli", True)
