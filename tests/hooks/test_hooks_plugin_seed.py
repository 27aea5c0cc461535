"""The plugin seed (001) through its surfaces: cortexgraph-hook as Claude Code runs it (Claude
Code's JSON on stdin, here in this process: tests/hooks/conftest.py) for the spec's phrasings,
query shaping and settings file name; the plugin folder for the memory-init agent and the count
of options the install asks for."""

from __future__ import annotations

import json
import re
import time

import anyio
from hooks_helpers import ROOT, assert_silent, context_of
from mcp import Client
from mcp_common import make_settings

from cortexgraph.mcp_server.app import build_server

PLUGIN = ROOT / "plugins" / "claude-code"
EVENT = "UserPromptSubmit"
HOST = "PostgreSQL 16 runs on host db-2."
WHY = (
    "We chose PostgreSQL over MySQL for the orders service because the ledger needs JSONB "
    "columns and strict transactions."
)
PLAN = "Plan for the billing migration: invoices move to the new ledger service in March."


def prompt(text: str) -> dict[str, str]:
    return {"hook_event_name": EVENT, "prompt": text}


def first_entry(ctx: str) -> str:
    return next(line for line in ctx.splitlines() if line.startswith("- ["))


def test_whats_the_plan_for_recalls_the_plan(run_hook, store) -> None:
    now = int(time.time())
    plan = store.save(PLAN, tags=["billing"], now=now - 86400).id
    store.save("Team lunch is on Fridays at the noodle place.", now=now)
    for text in ("What's the plan for the billing migration?", "What\u2019s the plan for billing?"):
        ctx = context_of(run_hook("user-prompt-submit", prompt(text)), EVENT)
        assert plan in first_entry(ctx), ctx


def test_please_document_this_decision_gets_a_save_reminder(run_hook, store) -> None:
    text = "Please document this decision: we deploy only on Tuesdays and Thursdays."
    ctx = context_of(run_hook("user-prompt-submit", prompt(text)), EVENT)
    assert "save_memory" in ctx and "Tuesdays and Thursdays" in ctx
    # a documentation task is not a save request
    assert_silent(run_hook("user-prompt-submit", prompt("Please document this decision tree")))


def test_a_rationale_question_ranks_the_memory_with_the_reason_first(run_hook, store) -> None:
    now = int(time.time())
    host = store.save(HOST, tags=["infra"], now=now - 3600).id
    why = store.save(WHY, tags=["decision"], now=now - 5 * 86400).id
    ctx = context_of(run_hook("user-prompt-submit", prompt("Why did we choose PostgreSQL?")), EVENT)
    assert why in first_entry(ctx), ctx  # the host note ranks below (or under the bar)
    assert host != why


def test_the_spec_settings_file_name_is_read_and_ours_wins(run_hook, store, project) -> None:
    save = prompt("Remember this: our invoices are numbered per calendar year.")
    assert "save_memory" in context_of(run_hook("user-prompt-submit", save), EVENT)
    (project / ".claude").mkdir()
    spec = project / ".claude" / "mnemograph.local.md"
    spec.write_text("---\nprompt_to_save: false\n---\n")
    assert_silent(run_hook("user-prompt-submit", save))
    (project / ".claude" / "cortexgraph.local.md").write_text("---\nprompt_to_save: true\n---\n")
    assert "save_memory" in context_of(run_hook("user-prompt-submit", save), EVENT)


def test_the_memory_init_agent_ships_with_the_plugin(tmp_path) -> None:
    text = (PLUGIN / "agents" / "memory-init.md").read_text(encoding="utf-8")
    front = text.split("---")[1]
    assert re.search(r"^name: memory-init$", front, re.M)
    assert re.search(r"^description: \S", front, re.M)
    tools = re.search(r"^tools: (.+)$", front, re.M).group(1).split(", ")
    prefix = "mcp__plugin_cortexgraph_cortexgraph__"
    ours = {t.removeprefix(prefix) for t in tools if t.startswith(prefix)}

    async def listed():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert ours == {"search_unified", "save_memory"} and ours <= anyio.run(listed)


def test_the_docs_count_the_options_the_install_asks_for() -> None:
    options = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())["userConfig"]
    docs = (ROOT / "docs" / "claude-code.md").read_text(encoding="utf-8")
    words = {6: "six", 7: "seven", 8: "eight"}
    assert f"the same {words[len(options)]}," in docs
    frontmatter = docs.split("## Per-project settings", 1)[1].split("---", 2)[1]
    documented = re.findall(r"^(\w+):", frontmatter, re.M)
    assert documented == list(options)


def test_what_do_we_know_about_recalls_as_a_process(run_hook, store) -> None:
    """The spec's "what do (you|we) know about": the "we" half, through a real hook process."""
    now = int(time.time())
    host = store.save(HOST, tags=["infra"], now=now - 3600).id
    store.save("Team lunch is on Fridays at the noodle place.", now=now)
    run = run_hook("user-prompt-submit", prompt("What do we know about db-2?"), process=True)
    assert host in first_entry(context_of(run, EVENT))
