"""The first hour with the programs, through their real entry points: help that reads right,
dry runs that write nothing, a mistyped vault that is refused instead of created, the vault
commands' --storage-path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from cortexgraph.cli import consolidate, maintenance
from cortexgraph.cli import main as cortexgraph_main


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


PROGRAMS = {
    "cortexgraph": cortexgraph_main.app,
    "cortexgraph-consolidate": consolidate.app,
    "cortexgraph-maintenance": maintenance.app,
}
SCREENS = [
    (program, path)
    for program, app in PROGRAMS.items()
    for path, _ in _commands(typer.main.get_command(app))
]


@pytest.mark.parametrize(("program", "path"), SCREENS, ids=[" ".join((p, *s)) for p, s in SCREENS])
def test_help_shows_a_type_only_for_options_that_take_a_value(program, path) -> None:
    result = CliRunner().invoke(
        PROGRAMS[program], [*path, "--help"], env={"COLUMNS": "200"}, prog_name=program
    )
    assert result.exit_code == 0, result.output
    assert "--help" in result.output
    for line in result.output.splitlines():
        assert "<bool>" not in line, line
        assert "list[" not in line, line
