"""`cortexgraph-consolidate` on input a new user gets wrong: a mistyped store is refused in
one line and never created (README: "A store or vault you name that does not exist is
refused, never created"), and a misspelt --merge-mode or --gc names the choices instead of
ending in a traceback from inside the flow. A named vault that does not exist is refused the
same way; only the default one beside the store is created by its first note."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cortexgraph.cli.consolidate import app


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in list(os.environ):
        if key.upper().startswith(("CORTEXGRAPH_", "LTM_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CORTEXGRAPH_ENABLE_EMBEDDINGS", "false")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "store").mkdir()
    return tmp_path


def _run(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_a_mistyped_storage_path_is_refused_and_not_created(folder: Path) -> None:
    for extra in ([], ["--json"], ["--dry-run"]):
        result = _run("--storage-path", "missing/stor", *extra)
        assert result.exit_code == 1, result.output
        assert "no store at missing/stor (--storage-path); nothing was created" in result.output
    assert not (folder / "missing").exists()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--merge-mode", "unknown merge mode 'foo'; choose preview | apply | link"),
        ("--gc", "unknown gc 'foo'; choose off | archive | delete"),
    ],
)
def test_a_misspelt_mode_names_the_choices(folder: Path, option: str, message: str) -> None:
    result = _run("--storage-path", "store", "--dry-run", option, "foo")
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [f"error: {message}"]


def test_a_mistyped_vault_is_refused_and_not_created(folder: Path) -> None:
    for extra in ([], ["--dry-run"]):
        result = _run("--storage-path", "store", "--vault", "Obsidain/Vault", *extra)
        assert result.exit_code == 1, result.output
        assert result.output.strip() == (
            "error: no vault at Obsidain/Vault (--vault); nothing was created: check the path, "
            "or create the folder first to start a new vault"
        )
    assert not (folder / "Obsidain").exists()


@pytest.mark.parametrize("hours", ["-1", "0"])
def test_a_scheduled_interval_that_is_not_positive_is_refused(folder: Path, hours: str) -> None:
    """``--scheduled --interval-hours -1`` ran every time, as if no interval had been given:
    a typo (a sign, a 0 for 0.5) passed without a word."""
    result = CliRunner().invoke(
        app, ["--storage-path", "store", "--scheduled", "--interval-hours", hours]
    )
    assert result.exit_code == 2, result.output
    assert "--interval-hours" in result.output
    assert not list((folder / "store").iterdir())  # nothing ran
