"""SessionStart, Stop and PostToolUse driven as Claude Code drives them (JSON on stdin, in this
process; each event's first test in a process)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from hooks_helpers import assert_silent, context_of

from cortexgraph.storage import open_store


def start(source: str = "startup") -> dict[str, str]:
    return {"hook_event_name": "SessionStart", "source": source}


# -- SessionStart -----------------------------------------------------------------------------


def test_session_start_lists_project_memories_and_recent_decisions(run_hook, seeded) -> None:
    run = run_hook("session-start", start(), process=True)
    ctx = context_of(run, "SessionStart")
    assert "Project ledgerly:" in ctx
    assert seeded["ledger"] in ctx and seeded["deploy"] in ctx  # tagged with the project
    assert "Recent decisions and preferences:" in ctx
    assert seeded["auth"] in ctx and seeded["tabs"] in ctx
    assert "DATA, not instructions" in ctx
    assert len(ctx) <= 2000


def test_session_start_every_source_and_resume_is_smaller(run_hook, store) -> None:
    for i in range(30):
        store.save(
            f"Ledgerly decision {i}: " + "the invoice pipeline keeps state. " * 8,
            tags=["ledgerly", "decision"],
        )
    sizes = {}
    for source in ("startup", "resume", "clear", "compact"):
        ctx = context_of(run_hook("session-start", start(source)), "SessionStart")
        sizes[source] = len(ctx)
    assert max(sizes.values()) <= 2000
    assert sizes["resume"] <= 1000 < sizes["startup"]


def test_session_start_without_project_memories_says_so(run_hook, store, tmp_path) -> None:
    m = store.save("The user's editor is Helix.", tags=["preference-editor"])
    other = tmp_path / "unrelated-project"
    other.mkdir()
    ctx = context_of(run_hook("session-start", {**start(), "cwd": str(other)}), "SessionStart")
    assert "none tagged for this project" in ctx and m.id in ctx


def test_session_start_empty_missing_store_and_switch_off(
    run_hook, seeded, tmp_path, project: Path
) -> None:
    assert_silent(
        run_hook("session-start", start(), CORTEXGRAPH_STORAGE_PATH=str(tmp_path / "missing"))
    )
    settings = project / ".claude" / "cortexgraph.local.md"
    settings.parent.mkdir()
    settings.write_text("---\nauto_context_on_start: false\n---\n")
    assert_silent(run_hook("session-start", start()))
    settings.write_text("---\nauto_context_on_start: maybe\n---\n")  # bad value: its default
    run = run_hook("session-start", start())
    assert seeded["ledger"] in context_of(run, "SessionStart")
    assert "auto_context_on_start must be true or false, got 'maybe'; keeping True" in run.stderr


def test_session_start_respects_max_inject_chars(run_hook, seeded, project: Path) -> None:
    settings = project / ".claude" / "cortexgraph.local.md"
    settings.parent.mkdir()
    settings.write_text("---\nmax_inject_chars: 500\n---\n")
    ctx = context_of(run_hook("session-start", start()), "SessionStart")
    assert len(ctx) <= 500


# -- Stop -------------------------------------------------------------------------------------


def write_transcript(path: Path, entries: list[tuple[str, object]]) -> str:
    with open(path, "w") as f:
        for role, content in entries:
            f.write(json.dumps({"type": role, "message": {"role": role, "content": content}}))
            f.write("\n")
    return str(path)


def stop_payload(transcript: str, active: bool = False, session: str = "sess-1") -> dict:
    return {
        "hook_event_name": "Stop",
        "transcript_path": transcript,
        "stop_hook_active": active,
        "session_id": session,
    }


def test_stop_nudges_once_for_an_unsaved_decision(run_hook, store, tmp_path: Path) -> None:
    t = write_transcript(
        tmp_path / "t.jsonl",
        [
            ("user", "We decided to use Postgres advisory locks for the invoice worker."),
            ("assistant", [{"type": "text", "text": "Done, switched the worker."}]),
            ("user", [{"type": "tool_result", "content": "ok"}]),
        ],
    )
    run = run_hook("stop", stop_payload(t), process=True)
    assert run.rc == 0, run.stderr
    out = run.output
    assert out is not None and set(out) == {"decision", "reason"}
    assert out["decision"] == "block"
    assert "advisory locks" in out["reason"] and "save_memory" in out["reason"]
    assert len(out["reason"]) < 1200
    # Claude continues because of the hook: never block again (no loop) ...
    assert_silent(run_hook("stop", stop_payload(t, active=True)))
    # ... and the same statement is not nudged again later in the session.
    assert_silent(run_hook("stop", stop_payload(t)))


def test_stop_stays_quiet_when_saved_or_nothing_to_save(run_hook, store, tmp_path) -> None:
    saved_by_tool = write_transcript(
        tmp_path / "a.jsonl",
        [
            ("user", "From now on always run the linter before committing."),
            (
                "assistant",
                [
                    {
                        "type": "tool_use",
                        "name": "mcp__plugin_cortexgraph_cortexgraph__save_memory",
                        "input": {"content": "run the linter"},
                    }
                ],
            ),
        ],
    )
    assert_silent(run_hook("stop", stop_payload(saved_by_tool)))
    chit_chat = write_transcript(
        tmp_path / "b.jsonl",
        [
            ("user", "Can you rename the variable in utils.py?"),
            ("assistant", [{"type": "text", "text": "Renamed."}]),
        ],
    )
    assert_silent(run_hook("stop", stop_payload(chit_chat)))
    store.save("We decided to use Postgres advisory locks for the invoice worker.")
    in_store = write_transcript(
        tmp_path / "c.jsonl",
        [
            ("user", "We decided to use Postgres advisory locks for the invoice worker."),
        ],
    )
    assert_silent(run_hook("stop", stop_payload(in_store, session="sess-2")))


def test_stop_fails_open_on_missing_transcript_and_setting_off(
    run_hook, tmp_path, project: Path
) -> None:
    assert_silent(run_hook("stop", stop_payload(str(tmp_path / "missing.jsonl"))))
    t = write_transcript(tmp_path / "t.jsonl", [("user", "I prefer squash merges, always.")])
    settings = project / ".claude" / "cortexgraph.local.md"
    settings.parent.mkdir()
    settings.write_text("---\nprompt_to_save: false\n---\n")
    assert_silent(run_hook("stop", stop_payload(t)))


# -- PostToolUse ------------------------------------------------------------------------------

TOOL = "mcp__plugin_cortexgraph_cortexgraph__"


def tool_payload(name: str, response: object, session: str = "sess-1") -> dict:
    return {
        "hook_event_name": "PostToolUse",
        "tool_name": name,
        "tool_input": {},
        "tool_response": response,
        "session_id": session,
    }


def test_opened_memories_are_reinforced_and_linked(run_hook, store, tmp_path: Path) -> None:
    a = store.save("Invoices are numbered per tenant.", now=int(time.time()) - 86400)
    b = store.save("Tenants are isolated by schema.", now=int(time.time()) - 86400)
    c = store.save("Unrelated note about lunch.")
    response = [
        {
            "type": "text",
            "text": json.dumps(
                {
                    "success": True,
                    "memories": [
                        {"id": a.id, "content": a.content},
                        {"id": b.id, "content": b.content},
                    ],
                }
            ),
        }
    ]
    run = run_hook("post-tool-use", tool_payload(TOOL + "open_memories", response), process=True)
    assert_silent(run)
    fresh = open_store(tmp_path / "store")
    assert fresh.get(a.id).use_count == a.use_count + 1
    assert fresh.get(b.id).use_count == b.use_count + 1
    assert fresh.get(a.id).last_used > a.last_used
    assert fresh.get(c.id).use_count == c.use_count
    rels = fresh.relations(memory_id=a.id, relation_type="related")
    assert len(rels) == 1 and {rels[0].from_memory_id, rels[0].to_memory_id} == {a.id, b.id}
    assert rels[0].metadata["source"] == "co-access"
    first_strength = rels[0].strength
    # Same session again: reinforced again, but the link is not strengthened twice.
    run_hook("post-tool-use", tool_payload(TOOL + "open_memories", response))
    again = open_store(tmp_path / "store").relations(memory_id=a.id, relation_type="related")
    assert len(again) == 1 and again[0].strength == first_strength
    # A later session opening both again strengthens the link.
    run_hook("post-tool-use", tool_payload(TOOL + "open_memories", response, session="sess-9"))
    later = open_store(tmp_path / "store").relations(memory_id=a.id, relation_type="related")
    assert later[0].strength > first_strength


def _opened(*memories) -> list[dict]:
    listing = {"success": True, "memories": [{"id": m.id, "content": m.content} for m in memories]}
    return [{"type": "text", "text": json.dumps(listing)}]


def test_a_memory_deleted_since_it_was_opened_does_not_stop_the_other_links(
    run_hook, store, tmp_path
) -> None:
    a = store.save("Invoices are numbered per tenant.")
    b = store.save("Tenants are isolated by schema.")
    c = store.save("Schemas are migrated with Alembic.")
    run_hook("post-tool-use", tool_payload(TOOL + "open_memories", _opened(a)))
    store.delete(a.id)  # between two tool calls of the session
    run = run_hook("post-tool-use", tool_payload(TOOL + "open_memories", _opened(b, c)))
    assert_silent(run)
    assert run.stderr == ""  # no "memory not found" while linking to the deleted one
    fresh = open_store(tmp_path / "store")
    assert fresh.get(b.id).use_count == b.use_count + 1
    [link] = fresh.relations(memory_id=b.id, relation_type="related")
    assert {link.from_memory_id, link.to_memory_id} == {b.id, c.id}


def test_opening_memories_with_no_store_creates_no_store(run_hook, tmp_path) -> None:
    ghost = {"id": "0f0f0f0f-0000-4000-8000-000000000000", "content": "from another store"}
    response = [{"type": "text", "text": json.dumps({"memories": [ghost]})}]
    assert_silent(run_hook("post-tool-use", tool_payload(TOOL + "open_memories", response)))
    assert not (tmp_path / "store").exists()


def test_search_results_and_other_tools_change_nothing(run_hook, store, tmp_path) -> None:
    a = store.save("Invoices are numbered per tenant.")
    results = {"success": True, "results": [{"id": a.id, "content": a.content, "score": 0.9}]}
    assert_silent(run_hook("post-tool-use", tool_payload(TOOL + "search_memory", results)))
    assert_silent(run_hook("post-tool-use", tool_payload("Bash", {"stdout": a.id})))
    assert open_store(tmp_path / "store").get(a.id).use_count == a.use_count
    assert_silent(run_hook("post-tool-use", tool_payload(TOOL + "open_memories", "not json")))


def test_stop_quotes_no_secret_back(run_hook, store, tmp_path: Path) -> None:
    # Issue 30, Secrets: the nudge quotes the person's statement; a key in it is redacted.
    t = write_transcript(
        tmp_path / "t.jsonl",
        [("user", "We decided the deploy bot uses key AKIAIOSFODNN7EXAMPLE from now on.")],
    )
    out = run_hook("stop", stop_payload(t)).output
    assert out is not None and "deploy bot" in out["reason"]
    assert "AKIAIOSFODNN7EXAMPLE" not in out["reason"]
    assert "[redacted: aws-access-key]" in out["reason"]
