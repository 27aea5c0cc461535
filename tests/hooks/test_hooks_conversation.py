"""UserPromptSubmit reads the user's last turns from the transcript when a prompt has no topic."""

from __future__ import annotations

import json
from pathlib import Path

from hooks_helpers import assert_silent, context_of

from cortexgraph.activation.intent_data import load_followups
from cortexgraph.hooks.conversation import with_earlier_turns
from cortexgraph.hooks.user_prompt_submit import analyze_prompt

EVENT = "UserPromptSubmit"


def transcript(path: Path, *user_turns: str) -> str:
    lines = []
    for text in user_turns:
        lines.append({"type": "user", "message": {"role": "user", "content": text}})
        lines.append(
            {
                "type": "assistant",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
            }
        )
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return str(path)


def test_labelled_follow_ups_find_their_topic_only_with_the_transcript(tmp_path):
    searches = [f for f in load_followups() if f.gold == "SEARCH"]
    with_turns = alone = 0
    for i, item in enumerate(searches):
        path = transcript(tmp_path / f"t{i}.jsonl", *item.earlier)
        joined = " ".join(analyze_prompt(with_earlier_turns(item.message, path)).topic_terms)
        single = " ".join(analyze_prompt(item.message).topic_terms)
        with_turns += all(w in joined for w in item.topic)  # "alice's" names alice
        alone += all(w in single for w in item.topic)
    assert (with_turns, alone) == (len(searches), 0)


def test_recall_without_a_topic_uses_the_previous_turn(run_hook, seeded, tmp_path):
    prompt = {"hook_event_name": EVENT, "prompt": "what did we decide last time?"}
    assert_silent(run_hook("user-prompt-submit", prompt))  # no topic, no transcript
    path = transcript(tmp_path / "t.jsonl", "The authentication of the web app keeps coming up.")
    run = run_hook("user-prompt-submit", {**prompt, "transcript_path": path})
    assert seeded["auth"] in context_of(run, EVENT)


def test_a_save_follow_up_carries_what_was_said_before(run_hook, seeded, tmp_path):
    path = transcript(tmp_path / "t.jsonl", "Our invoices are numbered per calendar year.")
    run = run_hook(
        "user-prompt-submit",
        {"hook_event_name": EVENT, "transcript_path": path, "prompt": "yes, remember that please"},
    )
    ctx = context_of(run, EVENT)
    assert "save_memory" in ctx and "invoices are numbered per calendar year" in ctx.lower()
