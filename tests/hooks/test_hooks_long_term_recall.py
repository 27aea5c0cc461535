"""A promoted memory stays in Claude Code's automatic recall, with what its vault note says now.

The memory earns promotion by use and the LTMPromoter writes its note into the vault; a person
then edits the note in Obsidian. UserPromptSubmit runs as Claude Code runs it (a process, JSON
on stdin) with no MCP server (the hook's own keyword search over the JSONL file) and with one
(the recall endpoint: search_unified over the store and the vault index).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio
import pytest
from child_env import hook_process
from hooks_helpers import AUTH_DECISION, HookRun, context_of
from mcp import Client, StdioServerParameters

from cortexgraph.agents.ltm_promoter import LTMPromoter, PromoterConfig
from cortexgraph.storage import open_store
from cortexgraph.storage.decay import DAY, promotion_reason
from cortexgraph.storage.models import MemoryStatus
from cortexgraph.vault_sync.note_sink import ObsidianNoteSink

PROMPT = "What did we decide about authentication in the web app?"
EDITED = AUTH_DECISION.replace("12 hours", "8 hours")
# A note a person wrote straight into the vault: never a memory in the store.
OWN_NOTE = "Authentication audit: the web app's login page is reviewed every quarter."


def _hook(env: dict[str, str], project: Path) -> HookRun:
    body = {"session_id": "s", "transcript_path": "", "cwd": str(project), "prompt": PROMPT}
    proc = hook_process("UserPromptSubmit", body, env)
    return HookRun(proc.returncode, proc.stdout, proc.stderr)


def _promoted_store(tmp_path: Path) -> tuple[str, str, str]:
    """(promoted id, archived id, note path) of a store whose decision the promoter moved to
    the vault (``vault/`` beside the store: the default both the hook and the server use)."""
    store = open_store(tmp_path / "store")
    now = time.time()
    decision = store.save(
        AUTH_DECISION, tags=["decision", "auth"], entities=["OAuth2", "PKCE"], now=now - 10 * DAY
    )
    # Used five times within ten days, last twelve days ago: promoted, and faded since.
    store.update(decision.id, use_count=5, last_used=int(now - 9 * DAY))
    assert promotion_reason(store.get(decision.id), now - 9 * DAY, store.config.decay)
    store.save("Team lunch is on Fridays at the noodle place.", now=now)
    merged_away = store.save(
        "Authentication in the web app: OAuth2 decided, sessions last 12 hours.", now=now - DAY
    )
    store.update(merged_away.id, status=MemoryStatus.ARCHIVED)
    sink = ObsidianNoteSink(tmp_path / "vault")
    report = LTMPromoter(store, sink).run(now=now - 9 * DAY)
    assert [p.memory_id for p in report.promotions] == [decision.id]
    promoted = store.get(decision.id)
    assert promoted.status is MemoryStatus.PROMOTED and promoted.promoted_to
    # The person edits the note in Obsidian; the STM record keeps the words it had.
    note = tmp_path / "vault" / promoted.promoted_to
    note.write_text(note.read_text("utf-8").replace("12 hours", "8 hours"), "utf-8")
    (tmp_path / "vault" / "Security.md").write_text(f"# Security\n\n{OWN_NOTE}\n", "utf-8")
    return decision.id, merged_away.id, promoted.promoted_to


def _lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.startswith("- [")]


@pytest.mark.slow
def test_a_promoted_memory_is_recalled_with_its_notes_words_with_and_without_a_server(
    hook_env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    promoted, archived, note_path = _promoted_store(tmp_path)

    alone = context_of(_hook(hook_env, project), "UserPromptSubmit")
    [first, *_] = _lines(alone)
    assert f"id {promoted}" in first and f"LTM note {note_path}" in first
    assert first.endswith(f"] {EDITED}")  # the note's words (not the record's), no links
    assert "12 hours" not in alone
    assert archived not in alone  # merged away: the merged memory stands for it
    assert "login page" not in alone  # the vault's own notes need the server's index

    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cortexgraph.mcp_server"],
        env={
            **hook_env,
            "CORTEXGRAPH_LOG_LEVEL": "WARNING",
            "CORTEXGRAPH_ENABLE_EMBEDDINGS": "false",
        },
    )

    async def with_server() -> HookRun:
        with anyio.fail_after(120):
            async with Client(server) as client:
                found = await client.call_tool("search_unified", {"query": "authentication"})
                assert json.loads(found.content[0].text)["count"] >= 2  # the server is up
                return await anyio.to_thread.run_sync(_hook, hook_env, project)

    served = context_of(anyio.run(with_server), "UserPromptSubmit")
    lines = _lines(served)
    [decision] = [line for line in lines if f"id {promoted}" in line]
    assert decision == lines[0] and f"LTM note {note_path}" in decision
    assert decision.endswith(f"] {EDITED}")  # no heading repeating the title, no links
    assert "12 hours" not in served
    [own] = [line for line in lines if "login page" in line]
    assert "LTM note Security.md" in own and " id " not in own  # a note, not a memory
    assert archived not in served


def test_session_start_lists_promoted_project_memories_above_faded_ones(
    run_hook, store, tmp_path: Path
) -> None:
    """Session start orders by decay alone, so a promoted memory counts at least ltm_weight
    (0.7): a faded long-term decision still beats a faded short-term memory."""
    now = time.time()
    fresh = [
        store.save(f"Ledgerly fresh memory {i}.", tags=["ledgerly"], now=now).id for i in range(2)
    ]
    old = now - 40 * DAY
    faded = store.save("Ledgerly once used Redis for queues.", tags=["ledgerly"], now=old).id
    kept = store.save("Ledgerly money is integer cents.", tags=["ledgerly"], now=old).id
    gone = store.save("Ledgerly deploys on Tuesdays.", tags=["ledgerly"], now=old).id
    config = PromoterConfig(decay=store.config.decay, force_ids=(kept, gone))
    LTMPromoter(store, ObsidianNoteSink(tmp_path / "vault"), config).run(now=old)
    kept_note = store.get(kept).promoted_to
    assert kept_note is not None
    note = tmp_path / "vault" / kept_note
    note.write_text(note.read_text("utf-8").replace("integer cents", "integer tenths of a cent"))
    (tmp_path / "vault" / str(store.get(gone).promoted_to)).unlink()  # deleted in Obsidian

    ctx = context_of(run_hook("session-start", {"source": "startup"}), "SessionStart")
    order = [next(i for i in (*fresh, faded, kept, gone) if i in line) for line in _lines(ctx)]
    assert order[:2] == fresh[::-1] or order[:2] == fresh
    assert set(order[2:4]) == {kept, gone} and order[4] == faded
    [kept_line] = [line for line in _lines(ctx) if kept in line]
    assert f"LTM note {kept_note}" in kept_line and "tenths of a cent" in kept_line
    [gone_line] = [line for line in _lines(ctx) if gone in line]
    assert "LTM (note not found)" in gone_line and "deploys on Tuesdays" in gone_line


def test_a_statement_already_promoted_is_not_nudged_to_be_saved_again(store, tmp_path) -> None:
    from cortexgraph.hooks.quick_search import RawStoreRecords
    from cortexgraph.hooks.stop import already_stored

    text = "We decided to deploy Ledgerly only on Tuesdays after the standup."
    saved = store.save(text)
    store.update(saved.id, status=MemoryStatus.PROMOTED, promoted_to="cortexgraph/deploys.md")
    records = RawStoreRecords.read(tmp_path / "store", store.config)
    assert already_stored(records, text, time.time())


# What a person may write into a note in Obsidian: recall quotes it into the transcript.
SECRET = "password=hunter2-Zq8xLm"


def test_a_secret_a_person_wrote_into_a_promoted_note_is_redacted_in_recall(
    run_hook, store, tmp_path: Path
) -> None:
    """A memory's secrets are redacted before it touches disk; a vault note is edited by hand,
    so the hook redacts the note's words it shows, as it redacts a prompt it quotes."""
    now = time.time()
    kept = store.save("Ledgerly staging runs on the blue cluster.", tags=["ledgerly"], now=now).id
    config = PromoterConfig(decay=store.config.decay, force_ids=(kept,))
    LTMPromoter(store, ObsidianNoteSink(tmp_path / "vault"), config).run(now=now)
    note = tmp_path / "vault" / str(store.get(kept).promoted_to)
    note.write_text(note.read_text("utf-8").replace("cluster.", f"cluster, {SECRET}."), "utf-8")

    ctx = context_of(run_hook("session-start", {"source": "startup"}), "SessionStart")
    [line] = [line for line in _lines(ctx) if kept in line]
    assert "blue cluster" in line and "[redacted: password]" in line
    assert "hunter2" not in ctx


def test_a_secret_in_a_vault_note_the_server_finds_is_redacted_in_recall(
    tmp_path: Path, short_dir: Path, monkeypatch
) -> None:
    from mcp_common import make_settings

    from cortexgraph import recall_endpoint as endpoint
    from cortexgraph.hooks.context_block import memory_line
    from cortexgraph.hooks.project_settings import PluginSettings
    from cortexgraph.hooks.recall import server_entries
    from cortexgraph.hooks.runtime import HookRuntime
    from cortexgraph.mcp_server.app import ServerState
    from cortexgraph.mcp_server.recall_endpoint import serve_recall_endpoint
    from cortexgraph.storage.config import StoreConfig

    monkeypatch.setattr(endpoint.tempfile, "gettempdir", lambda: str(short_dir))
    state = ServerState(make_settings(tmp_path))
    state.store.save("Team lunch is on Fridays.")
    (tmp_path / "vault" / "Staging.md").write_text(
        f"# Staging\n\nThe staging login: {SECRET}\n", "utf-8"
    )
    runtime = HookRuntime(
        storage_path=tmp_path / "stm",
        store_config=StoreConfig(),
        project_dir=None,
        state_dir=tmp_path / "state",
        plugin=PluginSettings(),
        vault_path=tmp_path / "vault",
    )

    async def go() -> list[str]:
        async with anyio.create_task_group() as tg:
            await tg.start(serve_recall_endpoint, state)
            entries = await anyio.to_thread.run_sync(server_entries, runtime, "staging login")
            tg.cancel_scope.cancel()
        assert entries is not None
        return [memory_line(e, 500) for e in entries]

    [line] = [line for line in anyio.run(go) if "Staging.md" in line]
    assert "staging login" in line and "[redacted: password]" in line
    assert "hunter2" not in line


def test_only_the_start_of_a_long_note_is_redacted_and_kept() -> None:
    """Redaction runs per note on every prompt: a note of token-like words (0.14 CPU s for
    256 KB) is cut first to what a line could ever show."""
    from cortexgraph.hooks.long_term import SHOWN_CHARS, note_entry

    words = f"{SECRET} " + "token 9fQ2xLm8Kp3Rt7Vw9fQ2xLm8Kp3Rt7Vw " * 10_000
    entry = note_entry(None, "", "Long.md", words)
    assert entry.text is not None and len(entry.text) <= SHOWN_CHARS
    assert entry.text.startswith("password=[redacted: password]")
