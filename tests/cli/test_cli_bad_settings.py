"""A setting whose value is not allowed: one line naming the variable, the value and what is
allowed, exit code 2, in every program (issue 35, item 3); no traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest
from child_env import child_env, run_module

from cortexgraph.settings import SettingsError, load_settings


def test_the_mcp_server_names_a_bad_value_in_one_line_and_exits_2(tmp_path) -> None:
    env = child_env(CORTEXGRAPH_DECAY_MODEL="foo", CORTEXGRAPH_STORAGE_PATH=str(tmp_path))
    proc = run_module("cortexgraph.mcp_server", env=env, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""  # stdout carries protocol messages only
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == [
        "cortexgraph-mcp: CORTEXGRAPH_DECAY_MODEL='foo' is not allowed: input should be "
        "'exponential', 'power_law' or 'two_component'"
    ]


def _cortexgraph() -> None:
    from cortexgraph.cli.main import main

    main()


def _consolidate() -> None:
    from cortexgraph.cli.consolidate import main

    main()


def _maintenance() -> None:
    from cortexgraph.cli.maintenance import main

    main()


@pytest.mark.parametrize(
    ("prog", "main", "argv"),
    [
        ("cortexgraph", _cortexgraph, ["list"]),
        ("cortexgraph-consolidate", _consolidate, ["run", "--dry-run"]),
        ("cortexgraph-maintenance", _maintenance, ["stats"]),
    ],
)
def test_each_cli_names_a_bad_value_in_one_line_and_exits_2(
    prog: str,
    main: Callable[[], None],
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path,
) -> None:
    monkeypatch.setenv("CORTEXGRAPH_STORAGE_PATH", str(tmp_path / "store"))
    monkeypatch.setenv("CORTEXGRAPH_PROMOTE_USE_COUNT", "zero")
    monkeypatch.setattr(sys, "argv", [prog, *argv])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        f"{prog}: CORTEXGRAPH_PROMOTE_USE_COUNT='zero' is not allowed: expected a whole number"
    ]
    assert not (tmp_path / "store").exists()  # nothing ran


def test_every_bad_value_is_named_with_what_is_allowed(monkeypatch) -> None:
    monkeypatch.setenv("CORTEXGRAPH_ENABLE_EMBEDDINGS", "maybe")
    monkeypatch.setenv("CORTEXGRAPH_CLUSTER_THRESHOLD", "1.5")  # the 1.x name of the setting
    with pytest.raises(SettingsError) as err:
        load_settings()
    message = str(err.value)
    assert "\n" not in message
    assert "CORTEXGRAPH_ENABLE_EMBEDDINGS='maybe' is not allowed: expected true or false" in message
    assert "CORTEXGRAPH_CLUSTER_THRESHOLD='1.5' is not allowed: input should be less than or " in (
        message
    )
