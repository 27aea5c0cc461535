"""Which store a command reads (issue 35, items 2 and 9): after `cortexgraph demo` the next
read command says which store is empty and how to point at the demo's; a store or vault the
user named that does not exist is refused in one line, never created; `issues` takes the same
--storage-path as every other command."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cortexgraph.cli.main import app
from cortexgraph.demo_data import seed_store
from cortexgraph.storage import open_store

NOW = 1_760_000_000.0


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with a fresh HOME (so the default store is empty) and none of our
    variables set."""
    for key in list(os.environ):
        if key.upper().startswith(("CORTEXGRAPH_", "LTM_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CORTEXGRAPH_ENABLE_EMBEDDINGS", "false")
    monkeypatch.setenv("COLUMNS", "60")  # narrow: a message must still be one line
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _demo_store(folder: Path) -> int:
    store = open_store(folder / "demo" / "store")
    return len(seed_store(store, now=NOW))


def test_after_the_demo_an_empty_default_store_points_at_the_demo_store(folder: Path) -> None:
    seeded = _demo_store(folder)
    default = folder / "home" / ".config" / "cortexgraph" / "jsonl"
    for command in (["list"], ["search", "postgres"]):
        result = _run(*command)
        assert result.exit_code == 0
        hints = [line for line in result.stderr.splitlines() if line.strip()]
        assert hints == [
            f"the store {default} is empty; the demo's memories are in demo/store: add "
            "--storage-path demo/store (or export CORTEXGRAPH_STORAGE_PATH=demo/store)"
        ]
    # and following the hint finds the demo's memories
    listed = _run("list", "--storage-path", "demo/store", "--status", "all", "--limit", "1000")
    assert listed.exit_code == 0 and listed.stderr == ""
    assert f"{seeded} memories (all)" in listed.stdout


def test_a_mistyped_storage_path_is_refused_and_not_created(folder: Path) -> None:
    _demo_store(folder)
    for command in (
        ["list"],
        ["search", "postgres"],
        ["show", "abcdef12"],
        ["history", "abcdef12"],
    ):
        result = _run(*command, "--storage-path", "demo/stor")
        assert result.exit_code == 2, command
        assert result.stderr.strip().splitlines() == [
            "error: no store at demo/stor (--storage-path); nothing was created: check the path"
        ]
    assert not (folder / "demo" / "stor").exists()


def test_a_store_named_by_the_variable_must_exist_too(folder: Path, monkeypatch) -> None:
    monkeypatch.setenv("CORTEXGRAPH_STORAGE_PATH", str(folder / "nope"))
    result = _run("list")
    assert result.exit_code == 2
    assert "no store at" in result.stderr and "(CORTEXGRAPH_STORAGE_PATH)" in result.stderr
    assert not (folder / "nope").exists()


def test_vault_commands_on_a_missing_vault_say_so(folder: Path) -> None:
    _demo_store(folder)
    store = ["--storage-path", "demo/store"]
    searched = _run("vault", "search", "postgres", *store, "--vault", "no-vault")
    assert searched.exit_code == 2
    assert searched.stderr.strip() == (
        "error: no vault at no-vault (--vault); nothing was created: check the path, or create "
        "the folder first to start a new vault"
    )
    refreshed = _run("vault", "refresh", *store, "--vault", "no-vault")
    assert refreshed.exit_code == 2 and "no vault at no-vault (--vault)" in refreshed.stderr
    assert not (folder / "no-vault").exists()
    # the default vault (beside the store) missing: the search says it reads STM only
    stm_only = _run("vault", "search", "postgres", *store)
    assert stm_only.exit_code == 0
    assert f"no vault at {Path('demo/vault')}: short-term memories only" in stm_only.stderr


def test_issues_take_storage_path_like_every_command_and_repo_still_works(folder) -> None:
    repo = folder / "demo" / "store"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for option in ("--storage-path", "--repo"):
        result = _run("issues", "list", option, str(repo))
        assert result.exit_code == 0, result.stderr
        assert result.stdout.strip() == "no issues"


def test_analyze_takes_storage_path_and_store_still_works(folder: Path) -> None:
    _demo_store(folder)
    for option in ("--storage-path", "--store"):
        result = _run("analyze", "--json", option, "demo/store", "We moved billing to Postgres")
        assert result.exit_code == 0, result.stderr
        assert '"action_recommendation"' in result.stdout
