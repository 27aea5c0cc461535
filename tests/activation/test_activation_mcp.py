"""analyze_message / analyze_for_recall through the SDK's client: the spec's shape, the
per-session window, and what the server tells the model about them."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_server"))
from mcp_helpers import make_settings, payload

from cortexgraph.activation.config import ActivationConfig
from cortexgraph.activation.followups import score_followups
from cortexgraph.activation.intent_data import Intent
from cortexgraph.mcp_server.app import build_server

PROPOSAL = "For the new payments service I'm thinking Go instead of Python."


def run(tmp_path, calls):
    async def go():
        async with Client(build_server(make_settings(tmp_path, spacy_model="none_here"))) as c:
            out = []
            for tool, args in calls:
                out.append(payload(await c.call_tool(tool, args)))
            prompt = await c.get_prompt("memory_system_prompt")
            return out, c.instructions, prompt.messages[0].content.text

    return anyio.run(go)


def test_intent_is_a_plain_string_with_details_beside_it_and_dedup_can_be_skipped(tmp_path):
    text = "Remember this: the orders database runs PostgreSQL 16 on the db-2 host."
    out, _, _ = run(
        tmp_path,
        [
            (
                "save_memory",
                {"content": "The orders database runs PostgreSQL 16 on the db-2 host."},
            ),
            ("analyze_message", {"message": text}),
            ("analyze_message", {"message": text, "include_dedup_check": False}),
        ],
    )
    checked, skipped = out[1], out[2]
    assert checked["intent"] in {i.value for i in Intent}  # a plain string, as the spec has it
    assert checked["intent"] == checked["intent_details"]["intent"]
    assert checked["action_recommendation"] == "DUPLICATE_DETECTED"
    assert skipped["action_recommendation"] == "MUST_SAVE"
    assert skipped["deduplication"]["method"] == "no-store"


def test_a_short_follow_up_is_read_with_the_turns_before_it_per_session(tmp_path):
    out, _, _ = run(
        tmp_path,
        [
            ("analyze_message", {"message": PROPOSAL, "session_id": "a"}),
            ("analyze_message", {"message": "yes, let's go with that", "session_id": "a"}),
            ("analyze_message", {"message": "yes, let's go with that", "session_id": "b"}),
            (
                "analyze_for_recall",
                {"message": "The billing database came up again.", "session_id": "c"},
            ),
            ("analyze_for_recall", {"message": "what did we decide last time?", "session_id": "c"}),
        ],
    )
    assert out[1]["action_recommendation"] == "SHOULD_SAVE"
    assert any("previous turns" in r for r in out[1]["reasoning_steps"])
    assert out[2]["action_recommendation"] == "NONE"  # another conversation: nothing before it
    assert out[4]["should_search"] and "billing" in out[4]["suggested_query"].split()


def test_the_model_is_told_about_the_analyze_tools_and_recommendations(tmp_path):
    _, instructions, prompt = run(tmp_path, [])
    for text in (instructions, prompt):
        for word in (
            "analyze_message",
            "analyze_for_recall",
            "MUST_SAVE",
            "SHOULD_SAVE",
            "SHOULD_SEARCH",
        ):
            assert word in text, word


def test_the_window_gains_on_the_labelled_follow_ups_without_models():
    config = ActivationConfig(use_embeddings=False, use_spacy=False)
    with_ctx, alone = score_followups(config), score_followups(config, with_context=False)
    assert with_ctx.saves_found >= alone.saves_found + 8
    assert with_ctx.false_saves <= alone.false_saves
    assert (with_ctx.topics_found, alone.topics_found) == (with_ctx.searches, 0)
