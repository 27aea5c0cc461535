"""The hook asks the running MCP server's search (cortexgraph.recall_endpoint), else its own."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import anyio
import pytest
from child_env import hook_process
from hooks_helpers import HookRun, context_of
from mcp import Client, StdioServerParameters

from cortexgraph import recall_endpoint as endpoint
from cortexgraph.storage.errors import InvalidInputError

PUPPY = "Caroline adopted a golden retriever puppy named Max."
OTHERS = [
    "We chose Postgres for the billing service because of its JSONB support.",
    "The deploy pipeline runs on GitHub Actions every Tuesday.",
]
# No word of this prompt's topic is in any memory: only the server's embeddings can find it.
PROMPT = "Do you remember anything about dogs?"


def _hook(env: dict[str, str], project: Path) -> HookRun:
    body = {"session_id": "s", "transcript_path": "", "cwd": str(project), "prompt": PROMPT}
    proc = hook_process("UserPromptSubmit", body, env)
    return HookRun(proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.slow
def test_hook_ranks_with_the_running_servers_search_and_alone_by_keywords(
    hook_env: dict[str, str], project: Path
) -> None:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cortexgraph.mcp_server"],
        env={
            **hook_env,
            "CORTEXGRAPH_LOG_LEVEL": "WARNING",
            "LTM_VAULT_PATH": str(project / "vault"),
            # each memory embedded from its own text: the others do not borrow the puppy's
            "CORTEXGRAPH_SAVE_NEIGHBOUR_CONTEXT": "false",
        },
    )

    async def with_server() -> tuple[str, HookRun]:
        with anyio.fail_after(120):
            async with Client(server) as client:
                saved = await client.call_tool("save_memory", {"content": PUPPY})
                puppy = json.loads(saved.content[0].text)["memory_id"]
                for text in OTHERS:
                    await client.call_tool("save_memory", {"content": text})
                # search_memory itself finds the puppy by meaning (the reference), once the
                # background embedder has its vector: until then it ranks by keywords alone.
                top: list[str] = []
                while top != [puppy]:
                    await anyio.sleep(0.2)
                    found = await client.call_tool("search_memory", {"query": "dogs", "top_k": 1})
                    top = [r["id"] for r in json.loads(found.content[0].text)["results"]]
                run = await anyio.to_thread.run_sync(_hook, hook_env, project)
                # a project that turns asking off keeps the hook's own keyword search
                off_env = {**hook_env, "CLAUDE_PLUGIN_OPTION_ASK_RUNNING_SERVER": "false"}
                off = await anyio.to_thread.run_sync(_hook, off_env, project)
                assert off.rc == 0 and off.stdout == "", off.stdout
                return puppy, run

    puppy, run = anyio.run(with_server)
    block = context_of(run, "UserPromptSubmit")
    assert f"id {puppy}" in block.splitlines()[3]  # the first memory of the block
    # The server has stopped: the hook's own keyword search shares no word with the prompt.
    alone = _hook(hook_env, project)
    assert alone.rc == 0 and alone.stdout == "", alone.stdout


def test_requests_are_checked_before_anything_is_searched() -> None:
    good = endpoint.parse_request(endpoint.encode({"op": "search", "query": "db", "top_k": 3}))
    assert good == endpoint.SearchRequest("db", 3)
    for bad in (
        b"not json\n",
        b'{"v": 2, "op": "search", "query": "x"}\n',
        b'{"v": 1, "op": "delete", "query": "x"}\n',
        b'{"v": 1, "op": "search", "query": "  "}\n',
        b'{"v": 1, "op": "search", "query": "x", "top_k": 500}\n',
        b'{"v": 1, "op": "search", "query": "x", "top_k": true}\n',
        b'{"v": 1, "op": "search", "query": "' + b"x" * 20_000 + b'"}\n',
    ):
        with pytest.raises(InvalidInputError):
            endpoint.parse_request(bad)


def test_a_folder_others_can_enter_is_never_used(
    tmp_path: Path, short_dir: Path, monkeypatch
) -> None:
    monkeypatch.setattr(endpoint.tempfile, "gettempdir", lambda: str(short_dir))
    folder = endpoint.endpoint_folder()
    assert folder is not None and folder.stat().st_mode & 0o777 == 0o700
    folder.chmod(0o755)  # someone loosened it (or made it first): it is not trusted
    assert endpoint.endpoint_folder() is None
    assert endpoint.endpoint_path(tmp_path / "store") is None
    assert endpoint.ask_running_server(tmp_path / "store", "x", 5) is None


def test_a_stale_socket_is_no_server_and_is_cleared_for_the_next(
    tmp_path: Path, short_dir: Path
) -> None:
    path = endpoint.endpoint_path(tmp_path / "store", folder=short_dir)
    assert path is not None
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # a server that was killed leaves its socket file behind
    assert path.exists()
    assert endpoint.claim(path) is True
    assert not path.exists()
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(str(path))
    live.listen()
    try:
        assert endpoint.claim(path) is False  # another server has the store: leave it
    finally:
        live.close()
        os.unlink(path)


def test_the_server_answers_with_search_unifieds_ranking_and_an_error_for_a_bad_request(
    tmp_path: Path, short_dir: Path, monkeypatch
) -> None:
    from mcp_common import make_settings

    from cortexgraph.mcp_server.app import ServerState
    from cortexgraph.mcp_server.recall_endpoint import serve_recall_endpoint

    monkeypatch.setattr(endpoint.tempfile, "gettempdir", lambda: str(short_dir))
    state = ServerState(make_settings(tmp_path))
    state.store.save("Ledgerly stores money as integer cents in PostgreSQL.")
    state.store.save("Team lunch is on Fridays.")
    off = ServerState(make_settings(tmp_path / "off", recall_endpoint=False))

    async def go() -> None:
        async with anyio.create_task_group() as tg:
            assert await tg.start(serve_recall_endpoint, off) is None
            path = await tg.start(serve_recall_endpoint, state)
            assert path == endpoint.endpoint_path(tmp_path / "stm")
            reply = await anyio.to_thread.run_sync(
                endpoint.ask_running_server, tmp_path / "stm", "how is money stored", 5
            )
            assert reply is not None and reply.embeddings == "off"
            assert [r.memory and r.memory["content"] for r in reply.results] == [
                "Ledgerly stores money as integer cents in PostgreSQL."
            ]
            async with await anyio.connect_unix(path) as raw:
                await raw.send(b'{"v": 1, "op": "search", "query": ""}\n')
                answer = json.loads(await raw.receive())
            assert answer == {"v": 1, "error": "query must be non-empty text"}
            tg.cancel_scope.cancel()
        assert not path.exists()  # removed on shutdown

    anyio.run(go)


def test_a_long_vault_note_is_sent_as_the_start_of_its_words(
    tmp_path: Path, short_dir: Path, monkeypatch
) -> None:
    """A hook shows a few hundred characters of a note; a vault's long notes (a clipped page,
    indexed up to 1 MB each) were sent whole on every prompt, five to a reply."""
    from mcp_common import make_settings

    from cortexgraph.mcp_server.app import ServerState
    from cortexgraph.mcp_server.recall_endpoint import serve_recall_endpoint

    monkeypatch.setattr(endpoint.tempfile, "gettempdir", lambda: str(short_dir))
    state = ServerState(make_settings(tmp_path))
    state.store.save("Team lunch is on Fridays.")
    filler = "Minutes of the quarterly planning meeting, item by item. " * 15_000
    (tmp_path / "vault" / "Planning.md").write_text(
        f"# Planning\n\nThe staging cluster moves to Frankfurt. {filler}\n", "utf-8"
    )

    async def go() -> endpoint.SearchReply | None:
        async with anyio.create_task_group() as tg:
            await tg.start(serve_recall_endpoint, state)
            reply = await anyio.to_thread.run_sync(
                endpoint.ask_running_server, tmp_path / "stm", "staging cluster", 5, 10.0
            )
            tg.cancel_scope.cancel()
        return reply

    reply = anyio.run(go)
    assert reply is not None
    [note] = [r.note for r in reply.results if r.note is not None]
    assert note.path == "Planning.md"
    assert note.text.startswith("The staging cluster moves to Frankfurt. Minutes of")
    assert len(note.text) <= endpoint.NOTE_TEXT_CHARS


def test_notes_a_person_wrote_in_the_vault_are_recalled_unless_switched_off(
    tmp_path: Path,
) -> None:
    """A vault may hold a person's journal: CORTEXGRAPH_RECALL_VAULT_NOTES=false keeps such
    notes out of what recall injects unasked; memories are recalled either way."""
    from mcp_common import make_settings

    from cortexgraph.mcp_server.app import ServerState
    from cortexgraph.mcp_server.recall_endpoint import search

    def recalled(home: Path, **overrides: object) -> list[tuple[str, str]]:
        state = ServerState(make_settings(home, **overrides))
        (home / "vault" / "Journal.md").write_text(
            "# Journal\n\nFelt anxious about the billing migration all week.\n",
            encoding="utf-8",
        )
        state.store.save("The billing migration moves invoices to PostgreSQL in March.")
        reply = search(state, endpoint.SearchRequest("billing migration", 5))
        shown: list[tuple[str, str]] = []
        for r in reply["results"]:
            if "memory" in r:
                shown.append(("memory", r["memory"]["content"]))
            else:
                shown.append(("note", r["note"]["text"]))
        return shown

    everything = recalled(tmp_path / "on")
    assert ("note", "Felt anxious about the billing migration all week.") in everything
    assert ("memory", "The billing migration moves invoices to PostgreSQL in March.") in everything
    assert recalled(tmp_path / "off", recall_vault_notes=False) == [
        ("memory", "The billing migration moves invoices to PostgreSQL in March.")
    ]
