"""The plugin folder: manifests parse, hooks point at real events, the wrapper fails open."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hooks_helpers import ROOT, HookRun, assert_silent, context_of
from mcp_common import INITIALIZE

from cortexgraph.hooks.__main__ import resolve
from cortexgraph.hooks.post_tool_use import TOOL_RE

PLUGIN = ROOT / "plugins" / "claude-code"
MARKET = ROOT / "plugins" / ".claude-plugin" / "marketplace.json"
MANIFEST_KEYS = {
    "name",
    "version",
    "description",
    "author",
    "homepage",
    "repository",
    "license",
    "keywords",
    "userConfig",
}
# Claude Code's userConfig option schema (strict: any other key stops the plugin loading).
OPTION_KEYS = {
    "type",
    "title",
    "description",
    "required",
    "default",
    "multiple",
    "sensitive",
    "min",
    "max",
}


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_manifest_and_marketplace_agree() -> None:
    manifest = load(PLUGIN / ".claude-plugin" / "plugin.json")
    assert set(manifest) <= MANIFEST_KEYS
    assert manifest["name"] == "cortexgraph" and manifest["version"] and manifest["description"]
    assert "cortexgraph.local.md" in manifest["description"]
    from cortexgraph.hooks.project_settings import PluginSettings

    options = manifest["userConfig"]
    assert set(options) == set(PluginSettings.__dataclass_fields__)  # every setting, no other
    for key, option in options.items():
        assert re.fullmatch(r"[A-Za-z_]\w*", key) and set(option) <= OPTION_KEYS
        assert option["type"] in {"string", "number", "boolean"} and option["title"]
        assert option["description"] and option["default"] == getattr(PluginSettings(), key)
    market = load(MARKET)
    assert {"name", "owner", "plugins"} <= set(market)
    (entry,) = market["plugins"]
    assert entry["name"] == manifest["name"]
    # one version: pyproject.toml's (PEP 440 "2.0.0.dev0" is semver "2.0.0-dev.0" here)
    release, _, dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "version"
    ].partition(".dev")
    assert manifest["version"] == entry["version"] == release + (f"-dev.{dev}" if dev else "")
    assert (MARKET.parent.parent / entry["source"] / ".claude-plugin" / "plugin.json").is_file()


def _start_plugin_server(root: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """The plugin's MCP server as Claude Code starts it: .mcp.json's command and args with
    ${CLAUDE_PLUGIN_ROOT} expanded, in a folder that is not the checkout."""
    (server,) = load(root / ".mcp.json")["mcpServers"].values()
    argv = [
        a.replace("${CLAUDE_PLUGIN_ROOT}", str(root)) for a in [server["command"], *server["args"]]
    ]
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=env["HOME"],
    )


def _initialize(proc: subprocess.Popen[str]) -> dict:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INITIALIZE) + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    proc.stdin.close()
    proc.wait(timeout=60)
    return json.loads(line)


def _bare_env(tmp_path: Path) -> dict[str, str]:
    """PATH without the venv's bin (Claude Code started from a desktop launcher), a fresh home."""
    from child_env import child_env

    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = child_env(
        PATH="/usr/bin:/bin",
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "store"),
        OMP_NUM_THREADS="1",
    )
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    return env


def test_plugin_server_answers_initialize_without_the_venv_on_path(tmp_path: Path) -> None:
    # Claude Code runs an installed plugin from a copy in its cache, away from the checkout.
    copy = tmp_path / "cache" / "cortexgraph"
    shutil.copytree(PLUGIN, copy)
    env = _bare_env(tmp_path)
    missing = _start_plugin_server(copy, env)
    _, err = missing.communicate(timeout=60)
    assert missing.returncode == 1 and "cortexgraph plugin" in err  # what to do, in one line

    recorded = subprocess.run(
        [sys.executable, "-m", "cortexgraph.cli.main", "plugin", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert recorded.returncode == 0, recorded.stderr
    assert json.loads(recorded.stdout)["python"] == sys.executable
    answer = _initialize(_start_plugin_server(copy, env))
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "cortexgraph"


def test_plugin_server_from_the_checkout_needs_no_setup(tmp_path: Path) -> None:
    # claude --plugin-dir plugins/claude-code: the checkout's .venv is found without a record.
    if not (ROOT / ".venv" / "bin" / "python").exists():
        pytest.skip("no .venv in this checkout")
    answer = _initialize(_start_plugin_server(PLUGIN, _bare_env(tmp_path)))
    assert answer["result"]["serverInfo"]["name"] == "cortexgraph"


def test_hooks_json_wires_each_event_to_a_real_handler() -> None:
    hooks = load(PLUGIN / "hooks" / "hooks.json")["hooks"]
    assert set(hooks) == {
        "SessionStart",
        "UserPromptSubmit",
        "Stop",
        "SessionEnd",
        "PostToolUse",
        "PostToolUseFailure",
    }
    # The behaviour monitor listens on both tool events; every other hook on its own event.
    monitor = {"PostToolUse", "PostToolUseFailure"}
    for event, groups in hooks.items():
        for group in groups:
            for hook in group["hooks"]:
                assert hook["type"] == "command"
                m = re.search(r'run-hook\.sh" ([a-z-]+)$', hook["command"])
                assert m, hook["command"]
                handler = resolve(m.group(1))
                expected = {resolve(event)} | (
                    {"post-tool-use-monitor"} if event in monitor else set()
                )
                assert handler in expected, hook["command"]
                assert "${CLAUDE_PLUGIN_ROOT}" in hook["command"]
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["timeout"] <= 3
    matcher = re.compile(hooks["PostToolUse"][0]["matcher"])
    opened = "mcp__plugin_cortexgraph_cortexgraph__open_memories"
    assert matcher.fullmatch(opened) and TOOL_RE.match(opened)
    # Only opening a memory is use: no co-access hook process after a search or a save.
    for tool in ("search_memory", "search_unified", "save_memory"):
        name = f"mcp__plugin_cortexgraph_cortexgraph__{tool}"
        assert not matcher.fullmatch(name) and not TOOL_RE.match(name)
    assert hooks["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"


@pytest.mark.parametrize("name", ["recall", "remember", "consolidate", "memory-graph"])
def test_slash_commands_have_frontmatter_and_use_arguments(name: str) -> None:
    text = (PLUGIN / "commands" / f"{name}.md").read_text(encoding="utf-8")
    front = text.split("---")[1]
    assert re.search(r"^description: \S", front, re.M)
    assert "$ARGUMENTS" in text


def wrapper(event: str, payload: dict, env: dict[str, str]) -> HookRun:
    proc = subprocess.run(
        ["sh", str(PLUGIN / "hooks" / "run-hook.sh"), event],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return HookRun(proc.returncode, proc.stdout, proc.stderr)


def test_wrapper_runs_the_hook_with_the_configured_python(hook_env, seeded, project) -> None:
    env = {**hook_env, "PATH": "/usr/bin:/bin", "CORTEXGRAPH_PYTHON": sys.executable}
    payload = {
        "hook_event_name": "UserPromptSubmit",
        "cwd": str(project),
        "prompt": "what did we decide about authentication?",
    }
    assert seeded["auth"] in context_of(
        wrapper("user-prompt-submit", payload, env), "UserPromptSubmit"
    )


def test_wrapper_without_cortexgraph_exits_zero_quietly(hook_env, tmp_path) -> None:
    env = {**hook_env, "PATH": "/usr/bin:/bin", "CORTEXGRAPH_PYTHON": str(tmp_path / "nope")}
    run = wrapper("user-prompt-submit", {"prompt": "what did we decide about auth?"}, env)
    assert_silent(run)
    assert "skipped" in run.stderr
