"""What a newcomer meets in the first hour, through the programs' real entry points: a mistyped
store refused by every command that reads one (README: "A store or vault you name that does
not exist is refused, never created"), the forms the help and docs show, and a second run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from child_env import ROOT, child_env, hook_in_process
from child_env import run_in_process as run_main
from cli_helpers import run_in_process

READERS = {
    "context": ["context", "what database does billing use?"],
    "analyze": ["analyze", "we chose Postgres for billing"],
    "graph": ["graph", "-o", "GRAPH.html"],
}


@pytest.mark.parametrize("command", list(READERS))
def test_a_command_refuses_a_named_store_that_does_not_exist(tmp_path, command) -> None:
    mistyped = tmp_path / "stor"
    args = [a.replace("GRAPH", str(tmp_path / "graph")) for a in READERS[command]]
    env = child_env(CORTEXGRAPH_ENABLE_EMBEDDINGS="false", COLUMNS="200")
    done = run_in_process([*args, "--storage-path", str(mistyped)], env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"no store at {mistyped} (--storage-path); nothing was created" in done.stderr
    assert not mistyped.exists()
    assert not (tmp_path / "graph.html").exists()


@pytest.mark.parametrize("command", ["context", "graph"])
def test_a_reader_of_the_vault_refuses_a_named_vault_that_does_not_exist(tmp_path, command) -> None:
    from cortexgraph.storage import open_store

    open_store(tmp_path / "store").save("We chose Postgres for billing", tags=["decision"])
    mistyped = tmp_path / "valt"
    args = [a.replace("GRAPH", str(tmp_path / "graph")) for a in READERS[command]]
    env = child_env(
        CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "store"),
        LTM_VAULT_PATH=str(mistyped),
        CORTEXGRAPH_ENABLE_EMBEDDINGS="false",
        COLUMNS="200",
    )
    done = run_in_process(args, env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"no vault at {mistyped} (LTM_VAULT_PATH); nothing was created" in done.stderr
    assert not mistyped.exists()
    assert not (tmp_path / "graph.html").exists()


@pytest.mark.parametrize("what", ["store", "vault"])
def test_serve_refuses_a_named_store_or_vault_that_does_not_exist(tmp_path, what) -> None:
    (tmp_path / "store").mkdir()
    mistyped = tmp_path / ("stor" if what == "store" else "valt")
    env = child_env(
        CORTEXGRAPH_STORAGE_PATH=str(mistyped if what == "store" else tmp_path / "store"),
        CORTEXGRAPH_ENABLE_EMBEDDINGS="false",
    )
    if what == "vault":
        env["LTM_VAULT_PATH"] = str(mistyped)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cortexgraph.cli.main", "serve", "--ui", "--port", "0"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _, stderr = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("serve started on a store that does not exist")
    assert proc.returncode == 2, stderr
    said = "no store" if what == "store" else "no vault"
    named = "CORTEXGRAPH_STORAGE_PATH" if what == "store" else "LTM_VAULT_PATH"
    assert f"{said} at {mistyped} ({named}); nothing was created" in stderr
    assert not mistyped.exists()


@pytest.fixture(scope="module")
def consolidated(tmp_path_factory, prefect_harness):
    """A store with a few memories, consolidated twice through the real program (the second
    run finds nothing changed); the two runs' output."""
    from cortexgraph.cli import consolidate
    from cortexgraph.storage import open_store

    root = tmp_path_factory.mktemp("twice")
    store = open_store(root / "store")
    store.save("We chose PostgreSQL 16 for billing", tags=["decision"], entities=["PostgreSQL"])
    store.save("Billing runs on PostgreSQL 16 now", tags=["billing"], entities=["PostgreSQL"])
    store.save("Deploys are frozen in December", tags=["ops"])
    env = child_env(
        CORTEXGRAPH_STORAGE_PATH=str(root / "store"),
        CORTEXGRAPH_ENABLE_EMBEDDINGS="false",
        COLUMNS="120",
    )
    argv = ["cortexgraph-consolidate", "--no-embeddings"]
    runs = [run_main(consolidate.main, argv, env=env) for _ in range(2)]
    for done in runs:
        assert done.returncode == 0, done.stdout + done.stderr
    return {"root": root, "env": env, "runs": runs}


def _consolidate(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    from cortexgraph.cli import consolidate

    return run_main(consolidate.main, ["cortexgraph-consolidate", *args], env=env)


@pytest.mark.slow  # a Prefect server or the web view's
def test_status_takes_the_store_and_json_after_the_command_too(consolidated) -> None:
    """The program's own usage says `cortexgraph-consolidate status [--json]`, as
    `cortexgraph-maintenance stats --storage-path X` works in either order."""
    store = consolidated["root"] / "store"
    env = {**consolidated["env"], "CORTEXGRAPH_STORAGE_PATH": str(consolidated["root"] / "x")}
    for args in (
        ["status", "--storage-path", str(store), "--json"],
        ["--storage-path", str(store), "status", "--json"],
        ["--json", "status", "--storage-path", str(store)],
    ):
        done = _consolidate(env, *args)
        assert done.returncode == 0, (args, done.stdout + done.stderr)
        last = json.loads(done.stdout)
        assert last["agents"] == ["decay", "cluster", "merge", "promote", "relations"], args
    plain = _consolidate(env, "status", "--storage-path", str(store))
    assert plain.returncode == 0 and plain.stdout.startswith("last run "), plain.stderr


@pytest.mark.slow  # a Prefect server or the web view's
def test_status_refuses_a_named_store_that_does_not_exist(consolidated) -> None:
    mistyped = consolidated["root"] / "stor"
    for args in (
        ["status", "--storage-path", str(mistyped)],
        ["--storage-path", str(mistyped), "status"],
    ):
        done = _consolidate(consolidated["env"], *args)
        assert done.returncode == 1, done.stdout
        assert f"no store at {mistyped} (--storage-path); nothing was created" in done.stderr
    assert not mistyped.exists()


@pytest.mark.slow  # a Prefect server or the web view's
def test_a_second_run_says_nothing_changed_in_whole_lines(consolidated) -> None:
    """After the scope line, each agent's summary is printed whole, one line each: it was the
    caption of an empty table, folded to ten characters a line ("incrementa / l: nothing /
    changed ...") for the first agent and left out (four blank lines) for the others."""
    second = consolidated["runs"][1].stdout
    last = json.loads(_consolidate(consolidated["env"], "status", "--json").stdout)
    (summary,) = set(last["summaries"].values())
    assert summary.startswith("incremental: nothing changed since the last run at")
    lines = second.splitlines()
    assert lines[0] == summary, second
    assert sum(line.endswith(summary) for line in lines) == 1 + 5, second
    assert "┏" not in second and "" not in lines, second


def test_a_backup_of_an_empty_store_restores(tmp_path) -> None:
    """`cortexgraph backup` of a store with nothing in it yet said "backed up 0 files", and
    `restore` then refused that file: "is not a cortexgraph backup"."""
    (tmp_path / "store").mkdir()
    (tmp_path / "other").mkdir()
    env = child_env(CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "store"), COLUMNS="200")
    archive = str(tmp_path / "empty.tar.gz")
    backed = run_in_process(["backup", "-o", archive, "--json"], env)
    assert backed.returncode == 0, backed.stderr
    restored = run_in_process(
        ["restore", archive, "--storage-path", str(tmp_path / "other"), "--json"], env
    )
    assert restored.returncode == 0, restored.stderr
    assert json.loads(restored.stdout)["moved_aside"] is None
    listed = run_in_process(["list", "--storage-path", str(tmp_path / "other"), "--json"], env)
    assert listed.returncode == 0, listed.stderr


@pytest.mark.slow  # a Prefect server or the web view's
def test_serve_on_any_free_port_prints_the_port_it_got(tmp_path) -> None:
    """`--port 0` ("0: any free port", says the help) printed http://127.0.0.1:0/."""
    import re
    import urllib.request

    (tmp_path / "store").mkdir()
    env = child_env(CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "store"))
    serve = ["serve", "--ui", "--no-embeddings", "--port", "0"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cortexgraph.cli.main", *serve],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert found, line
        port = int(found.group(1))
        assert port != 0, line
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/runs", timeout=60) as answer:
            assert answer.status == 200
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _leaf_commands(command, path=()):
    subs = getattr(command, "commands", {})
    if not subs:
        yield path, command
    for name, sub in subs.items():
        yield from _leaf_commands(sub, (*path, name))


# The commands that fill a store: given one that does not exist, they make it (README).
FILLERS = {("import",), ("restore",)}


def _store_commands():
    import typer

    from cortexgraph.cli import main

    root = typer.main.get_command(main.app)
    for path, command in _leaf_commands(root):
        opts = {opt for param in command.params for opt in getattr(param, "opts", ())}
        # serve is a server (test_serve_refuses_... above); edit opens $EDITOR
        if "--storage-path" in opts and path not in {("serve",), ("edit",)}:
            yield path, command


STORE_COMMANDS = list(_store_commands())


@pytest.mark.parametrize(
    ("path", "command"), STORE_COMMANDS, ids=[" ".join(p) for p, _ in STORE_COMMANDS]
)
def test_no_command_leaves_a_mistyped_store_behind(tmp_path, path, command) -> None:
    """Every command that takes --storage-path, given one that does not exist: readers and
    changers refuse it; import and restore, which fill a store, create it only when they
    succeed (a file they cannot read leaves nothing behind, not an empty store folder)."""
    (tmp_path / "unreadable.tar.gz").write_text("")
    fill = {"source": str(tmp_path / "unreadable.tar.gz"), "query": "postgres"}
    args = list(path)
    for param in command.params:
        if param.param_type_name == "argument":
            args.append(fill.get(param.name or "", "abcdef12"))
        elif param.required:
            args += [param.opts[0], str(tmp_path / "out.tar.gz")]
    mistyped = tmp_path / "stor"
    env = child_env(CORTEXGRAPH_ENABLE_EMBEDDINGS="false", COLUMNS="200")
    done = run_in_process([*args, "--storage-path", str(mistyped)], env)
    assert not mistyped.exists(), done.stderr
    if path in FILLERS:
        assert done.returncode == 2 and "error:" in done.stderr, done.stderr
    else:
        said = done.stderr + done.stdout
        assert f"no store at {mistyped}" in said or f"{mistyped} does not exist" in said, said


def test_the_readme_names_the_commands_that_create_a_store() -> None:
    readme = " ".join((ROOT / "README.md").read_text().split())
    rule = readme[readme.index("A store or vault you name that does not exist") :][:400]
    for (name,) in FILLERS:
        assert f"`cortexgraph {name}`" in rule, rule
    assert "import makes the vault" in rule, rule  # as tests/cli/test_cli_transfer.py has it


def test_a_misspelt_vault_variable_is_named_not_silently_ignored(tmp_path) -> None:
    """LTM_VAULT_PATH is one of the README's variables; misspelt, the vault quietly became the
    default one beside the store (a CORTEXGRAPH_* typo was already named)."""
    (tmp_path / "store").mkdir()
    env = child_env(
        CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "store"),
        LTM_VALUT_PATH=str(tmp_path / "Obsidian"),
        LTM_PROMOTED_FOLDER="notes",
        CORTEXGRAPH_ENABLE_EMBEDDINGS="false",
    )
    done = run_in_process(["list"], env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == (
        "cortexgraph: unknown setting LTM_VALUT_PATH is ignored; did you mean LTM_VAULT_PATH?"
    )
    assert "LTM_PROMOTED_FOLDER" not in done.stderr  # a known name says nothing
    prompt = {"session_id": "s", "prompt": "what did we decide about the billing database?"}
    # the hook's fast path: no CORTEXGRAPH_* variable beyond the store
    del env["CORTEXGRAPH_ENABLE_EMBEDDINGS"]
    hook = hook_in_process("user-prompt-submit", prompt, env)
    assert hook.returncode == 0
    assert hook.stderr.count("unknown setting LTM_VALUT_PATH is ignored") == 1, hook.stderr


@pytest.mark.parametrize(
    ("env", "said"),
    [
        (
            {"CORTEXGRAPH_LOG_LEVEL": "verbose"},
            "CORTEXGRAPH_LOG_LEVEL='verbose' is not allowed: input should be 'DEBUG', 'INFO', "
            "'WARNING', 'ERROR' or 'CRITICAL'",
        ),
        (
            {"CORTEXGRAPH_HTTP_PORT": "99999"},
            "CORTEXGRAPH_HTTP_PORT='99999' is not allowed: input should be less than or equal to "
            "65535",
        ),
    ],
    ids=["log-level", "port"],
)
def test_the_mcp_server_names_a_bad_variable_in_one_line(tmp_path, env, said) -> None:
    """A log level logging does not know ended the server in a traceback from logging; a
    port over 65535 in one from asyncio's bind ("OverflowError: bind(): port must be ...")."""
    from child_env import run_module

    base = child_env(CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "store"), **env)
    done = run_module("cortexgraph.mcp_server", "--http", env=base, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [f"cortexgraph-mcp: {said}"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--log-level", "verbose"],
            "argument --log-level: 'verbose' is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
        ),
        (["--port", "99999"], "argument --port: 99999 is not a port (1-65535)"),
        (["--port", "http"], "argument --port: 'http' is not a port (1-65535)"),
    ],
    ids=["log-level", "port", "port-word"],
)
def test_the_mcp_server_names_a_bad_option_by_its_flag(tmp_path, args, said) -> None:
    from child_env import run_module

    base = child_env(CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "store"))
    done = run_module("cortexgraph.mcp_server", "--http", *args, env=base, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.strip().splitlines()[-1] == f"cortexgraph-mcp: error: {said}"


def test_a_log_level_in_lower_case_is_read() -> None:
    from cortexgraph.settings import load_settings

    assert load_settings(log_level="debug").log_level == "DEBUG"


def test_the_demo_lists_each_issue_with_its_status(tmp_path) -> None:
    """The demo's issue list printed "• cg-xqq  Review 2 similar memories": the status, written
    as "[open]", was read as rich markup and dropped, as was a title's own [bracket]."""
    from rich.console import Console

    from cortexgraph.cli.demo_cmd import _search_table, _show_issues
    from cortexgraph.storage.beads import open_tracker

    tracker = open_tracker(tmp_path / "store", "cg", init=True)
    review = tracker.create("Review 2 similar memories", labels=["consolidation:cluster"])
    done = tracker.create("Merge [billing] notes", labels=["consolidation:merge"])
    tracker.close(done.id, "merged")
    console = Console(record=True, width=200)
    _show_issues(console, tracker.query(), "in the test's tracker")
    text = console.export_text()
    assert f"• {review.id} [open] Review 2 similar memories" in text, text
    assert f"• {done.id} [closed] Merge [billing] notes" in text, text
    _search_table(console, "search", [("1.00", "STM", "CI logs: strip [bold] and [/] codes")])
    assert "CI logs: strip [bold] and [/] codes" in console.export_text()


@pytest.mark.slow  # a Prefect server or the web view's
def test_a_memory_with_brackets_is_shown_by_the_run_not_a_traceback(
    tmp_path, prefect_harness
) -> None:
    """A fading memory that says "[/]" ended `cortexgraph-consolidate` in rich's MarkupError
    ("closing tag '[/]' ... has nothing to close"): the agents' tables read stored text as
    markup. "[x]" was silently dropped."""
    from cortexgraph.storage import open_store

    store = open_store(tmp_path / "store")
    store.save("In markdown a closing tag [/] ends the bold part", tags=["docs"], now=1.6e9)
    store.save("Checkbox [x] means done in our todo notes", tags=["docs"], now=1.6e9)
    env = child_env(
        CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "store"),
        CORTEXGRAPH_ENABLE_EMBEDDINGS="false",
        COLUMNS="200",
    )
    done = _consolidate(env, "--dry-run", "--no-embeddings", "--agent", "decay")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "In markdown a closing tag [/] ends the bold part" in done.stdout, done.stdout
    assert "Checkbox [x] means done in our todo notes" in done.stdout, done.stdout


def _programs():
    import typer

    from cortexgraph.cli import consolidate, maintenance
    from cortexgraph.cli import main as cortexgraph_main

    for program, app in (
        ("cortexgraph", cortexgraph_main.app),
        ("cortexgraph-consolidate", consolidate.app),
        ("cortexgraph-maintenance", maintenance.app),
    ):
        root = typer.main.get_command(app)
        yield from (((program, *path), command) for path, command in _walk(root))


def _walk(command, path=()):
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _walk(sub, (*path, name))


def test_every_option_says_what_it_does_in_help() -> None:
    """`cortexgraph vault search --help` listed --min-score, --window-days, --stm-weight and
    --ltm-weight with no word on what they weigh or bound; `graph --storage-path` too."""
    bare = [
        f"{' '.join(path)} {param.opts[0]}"
        for path, command in _programs()
        for param in command.params
        if param.param_type_name == "option"
        and param.name not in {"install_completion", "show_completion", "help"}
        and not getattr(param, "help", None)
    ]
    assert bare == []


def test_the_unified_search_help_gives_the_weights_settings_default_to() -> None:
    from cortexgraph.settings import Settings

    helps = {
        param.name: param.help
        for path, command in _programs()
        if path == ("cortexgraph", "vault", "search")
        for param in command.params
    }
    for side in ("stm", "ltm"):
        default = Settings.model_fields[f"search_{side}_weight"].default
        assert f"CORTEXGRAPH_SEARCH_{side.upper()}_WEIGHT, {default:g})" in helps[f"{side}_weight"]


def test_issues_list_names_the_statuses_for_a_misspelt_one(tmp_path) -> None:
    """`cortexgraph issues list --status opn` answered "no issues", as if there were none."""
    from cortexgraph.storage.beads import open_tracker

    tracker = open_tracker(tmp_path / "store", "cg", init=True)
    tracker.create("Review 2 similar memories", labels=["consolidation:cluster"])
    env = child_env(CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "store"), COLUMNS="200")
    done = run_in_process(["issues", "list", "--status", "opn"], env)
    assert done.returncode == 1, done.stdout
    assert done.stderr.strip() == (
        "error: unknown status 'opn'; choose open, in_progress, blocked, deferred or closed"
    )
    listed = run_in_process(["issues", "list", "--status", "open"], env)
    assert "Review 2 similar memories" in listed.stdout


@pytest.mark.parametrize("command", ["index", "stats", "check"])
def test_a_missing_vault_is_named_by_where_it_came_from(tmp_path, command) -> None:
    """`cortexgraph vault stats` with no vault yet said "Invalid value for --vault: vault ...
    does not exist" in a usage box, though no --vault was given (the default, or
    LTM_VAULT_PATH); `vault search` and `promote` said where it came from and what to do."""
    (tmp_path / "store").mkdir()
    env = child_env(CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "store"), COLUMNS="200")
    default = run_in_process(["vault", command], env)
    assert default.returncode == 2
    assert default.stderr.strip() == (
        f"error: no vault at {tmp_path / 'vault'} (the default); name one with --vault PATH "
        "or LTM_VAULT_PATH"
    )
    named = run_in_process(["vault", command], {**env, "LTM_VAULT_PATH": str(tmp_path / "v")})
    assert named.returncode == 2
    assert named.stderr.strip() == (
        f"error: no vault at {tmp_path / 'v'} (LTM_VAULT_PATH); nothing was created: check the "
        "path, or create the folder first to start a new vault"
    )
    assert not (tmp_path / "vault").exists() and not (tmp_path / "v").exists()


def test_an_editor_that_cannot_start_leaves_no_copy_behind(cli) -> None:
    """`cortexgraph edit ID` with $EDITOR misspelt said "cannot start the editor ...; set
    $EDITOR" and left the record's copy in the temporary folder, unnamed, at every try."""
    memory = cli.store().save("Deploys are frozen in December", tags=["ops"])
    tmp = cli.env["TMPDIR"]
    done = cli("edit", memory.id, ok=False, EDITOR="vimm")
    assert done.returncode == 2
    assert "cannot start the editor" in done.stderr and "set $EDITOR" in done.stderr
    assert [p.name for p in Path(tmp).iterdir()] == []
    assert cli.store().get(memory.id).content == "Deploys are frozen in December"


def test_a_hook_names_a_bad_setting_in_one_line(tmp_path) -> None:
    """Every program says "CORTEXGRAPH_DECAY_MODEL='foo' is not allowed: ..." in one line;
    the hooks printed pydantic's four-line ValidationError naming the field, not the
    variable (and still exited 0, as a hook must)."""
    (tmp_path / "store").mkdir()
    env = child_env(CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "store"), CORTEXGRAPH_DECAY_MODEL="foo")
    prompt = {"session_id": "s", "prompt": "what did we decide about the billing database?"}
    hook = hook_in_process("user-prompt-submit", prompt, env)
    assert hook.returncode == 0 and hook.stdout == ""
    assert hook.stderr.strip().splitlines() == [
        "cortexgraph UserPromptSubmit hook skipped: SettingsError: CORTEXGRAPH_DECAY_MODEL='foo' "
        "is not allowed: input should be 'exponential', 'power_law' or 'two_component'"
    ]


def test_a_dask_address_without_the_dask_runner_is_refused(tmp_path) -> None:
    """README: `--task-runner dask   # ... (--dask-address)`. `--dask-address tcp://...` alone
    was ignored without a word: the run used threads on this machine."""
    (tmp_path / "store").mkdir()
    env = child_env(CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "store"))
    args = ("--dry-run", "--dask-address", "tcp://127.0.0.1:8786")
    done = _consolidate(env, *args)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: --dask-address needs --task-runner dask (the run would use threads here)"
    ]


def test_export_refuses_a_named_vault_that_does_not_exist(tmp_path) -> None:
    """`cortexgraph export -o all.jsonl` with LTM_VAULT_PATH mistyped said "exported 1
    memories ... 0 notes": the backup a user trusted had none of their notes."""
    from cortexgraph.storage import open_store

    open_store(tmp_path / "store").save("We chose Postgres for billing", tags=["decision"])
    env = child_env(
        CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "store"),
        LTM_VAULT_PATH=str(tmp_path / "Valt"),
        CORTEXGRAPH_ENABLE_EMBEDDINGS="false",
    )
    done = run_in_process(["export", "-o", str(tmp_path / "all.jsonl")], env)
    assert done.returncode == 2, done.stdout
    assert f"no vault at {tmp_path / 'Valt'} (LTM_VAULT_PATH); nothing was created" in done.stderr
    assert not (tmp_path / "all.jsonl").exists() and not (tmp_path / "Valt").exists()
    # the default vault, not there yet, is no error: there are no notes to export
    del env["LTM_VAULT_PATH"]
    assert run_in_process(["export", "-o", str(tmp_path / "all.jsonl")], env).returncode == 0
