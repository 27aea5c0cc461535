"""The first hour with the programs, through their real entry points: help that reads right,
dry runs that write nothing, a mistyped vault that is refused instead of created, the vault
commands' --storage-path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer
from child_env import child_env
from cli_helpers import run_in_process
from typer.testing import CliRunner

from cortexgraph.cli import consolidate, maintenance, vault_cmd
from cortexgraph.cli import main as cortexgraph_main
from cortexgraph.storage import open_store


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


def _options(path: tuple[str, ...]) -> set[str]:
    command = typer.main.get_command(cortexgraph_main.app)
    for name in path:
        command = command.commands[name]
    return {opt for param in command.params for opt in getattr(param, "opts", ())}


VAULT_COMMANDS = [
    p for program, p in SCREENS if program == "cortexgraph" and "--vault" in _options(p)
]


@pytest.mark.parametrize("path", VAULT_COMMANDS, ids=[" ".join(p) for p in VAULT_COMMANDS])
def test_every_command_that_takes_vault_takes_storage_path_too(path) -> None:
    assert "--storage-path" in _options(path)


def test_vault_check_reads_the_vault_beside_the_store_named_by_storage_path(tmp_path) -> None:
    (tmp_path / "demo" / "store").mkdir(parents=True)
    (tmp_path / "demo" / "vault").mkdir()
    (tmp_path / "demo" / "vault" / "a.md").write_text("hello [[missing]]\n")
    env = child_env(CORTEXGRAPH_ENABLE_EMBEDDINGS="false", COLUMNS="200")
    store = str(tmp_path / "demo" / "store")
    for command in ("check", "stats", "index"):
        done = run_in_process(["vault", command, "--storage-path", store], env)
        assert done.returncode == (1 if command == "check" else 0), done.stderr
    assert (
        "[[missing]] opens no note"
        in run_in_process(["vault", "check", "--storage-path", store], env).stdout
    )
    mistyped = run_in_process(["vault", "check", "--storage-path", store + "x"], env)
    assert mistyped.returncode == 2
    assert f"no store at {store}x (--storage-path); nothing was created" in mistyped.stderr


def _store_with_an_unreadable_line(cli) -> tuple[str, dict[str, bytes]]:
    store = cli.store()
    memory = store.save("Alice moved to Berlin in March", tags=["people"])
    store.save("The deploy runs on Fridays", tags=["ops"])
    with (cli.storage / "memories.jsonl").open("ab") as f:
        f.write(b'{"id": "half-written\n')
    return memory.id, _files(cli.storage)


def _files(root) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_vault_promote_dry_run_writes_nothing_and_names_the_unreadable_line(cli) -> None:
    memory_id, before = _store_with_an_unreadable_line(cli)
    cli.vault.mkdir()
    done = cli("vault", "promote", memory_id, "--force", "--dry-run")
    assert f"would promote {memory_id}" in done.stdout
    assert "dry run: 1 unreadable line(s) in" in done.stderr
    assert "memories.quarantine.jsonl" in done.stderr
    assert _files(cli.storage) == before
    assert list(cli.vault.iterdir()) == []


def test_repair_context_dry_run_writes_nothing_and_names_the_unreadable_line(cli) -> None:
    _, before = _store_with_an_unreadable_line(cli)
    result = CliRunner().invoke(
        maintenance.app, ["repair-context", "--storage-path", str(cli.storage), "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    assert "dry run: 1 unreadable line(s) in" in result.output
    assert _files(cli.storage) == before


def test_maintenance_refuses_a_mistyped_storage_path_instead_of_creating_it(tmp_path) -> None:
    for command in ("stats", "compact", "repair-context"):
        result = CliRunner().invoke(
            maintenance.app, [command, "--storage-path", str(tmp_path / "stor")]
        )
        assert result.exit_code == 2, result.output
        assert f"no store at {tmp_path / 'stor'} (--storage-path)" in result.output
    assert not (tmp_path / "stor").exists()


def test_vault_promote_refuses_a_named_vault_that_does_not_exist_and_makes_the_default(
    cli,
) -> None:
    memory = cli.store().save("Deploys are frozen in December", tags=["ops"])
    refused = cli("vault", "promote", memory.id, "--force", ok=False)
    assert refused.returncode == 2
    assert f"no vault at {cli.vault} (LTM_VAULT_PATH); nothing was created" in refused.stderr
    assert not cli.vault.exists()
    assert cli.store().get(memory.id).status.value == "active"
    # with no vault named, the default one beside the store is created by its first note
    del cli.env["LTM_VAULT_PATH"]
    done = cli("vault", "promote", memory.id, "--force")
    assert "created" in done.stdout
    default = cli.storage.parent / "vault"
    assert default == cli.vault and list((default / "cortexgraph").glob("*.md"))


def test_an_empty_vault_variable_is_unset_not_the_working_directory(tmp_path, monkeypatch) -> None:
    memory = open_store(tmp_path / "store").save("Deploys are frozen in December")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # "" as a path: where the command runs
    monkeypatch.setenv("CORTEXGRAPH_STORAGE_PATH", str(tmp_path / "store"))
    monkeypatch.setenv("CORTEXGRAPH_ENABLE_EMBEDDINGS", "false")
    monkeypatch.setenv("LTM_VAULT_PATH", "")
    result = CliRunner().invoke(vault_cmd.app, ["promote", memory.id, "--force"])
    assert result.exit_code == 0, result.output
    assert list(elsewhere.iterdir()) == []
    assert list((tmp_path / "vault" / "cortexgraph").glob("*.md"))
