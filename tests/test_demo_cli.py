"""The README's main command: `cortexgraph demo` seeds, consolidates and leaves a vault + issues."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _demo(directory: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "cortexgraph.cli.main",
            "demo",
            "--dir",
            str(directory),
            *extra,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_demo_seeds_consolidates_and_leaves_a_vault_and_issues(
    tmp_path: Path, prefect_harness: str
) -> None:
    # The demo's flow runs on the session's Prefect server (PREFECT_API_URL, tests/conftest.py).
    out = _demo(tmp_path / "demo", "--no-embeddings")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Seeded 302 memories" in out.stdout
    for title in ("Decay analysis", "Relationships"):
        assert title in out.stdout
    notes = list((tmp_path / "demo" / "vault").rglob("*.md"))
    assert notes, "promotion wrote no notes"
    issues = (tmp_path / "demo" / "store" / ".beads" / "issues.jsonl").read_text().splitlines()
    assert issues and all(json.loads(line)["id"].startswith("cg-") for line in issues)
    log = subprocess.run(
        ["git", "-C", str(tmp_path / "demo" / "store"), "log", "--oneline"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # One commit per agent per run (issue 20), each naming its agent and its issue changes.
    commits = log.splitlines()
    assert 1 <= len(commits) <= 5
    assert all("issue change" in line for line in commits), commits
    # Promoted memories are marked in the store, pointing at notes that exist.
    promoted = [
        json.loads(line)
        for line in (tmp_path / "demo" / "store" / "memories.jsonl").read_text().splitlines()
        if '"promoted"' in line
    ]
    last = {m["id"]: m for m in promoted}
    assert any((tmp_path / "demo" / "vault" / m["promoted_to"]).exists() for m in last.values())


def test_demo_refuses_to_wipe_a_folder_it_did_not_create(tmp_path: Path) -> None:
    precious = tmp_path / "mine"
    precious.mkdir()
    (precious / "thesis.md").write_text("years of work")
    out = _demo(precious)
    assert out.returncode == 2
    assert "not a cortexgraph demo folder" in out.stdout + out.stderr
    assert (precious / "thesis.md").read_text() == "years of work"
