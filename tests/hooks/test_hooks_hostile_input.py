"""Hostile input to the hooks (issue 15, Low): a settings file whose YAML nests too deep, and a
1 MB prompt. Driven through the hook process, as Claude Code runs it."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest
from hooks_helpers import context_of

from cortexgraph.hooks.phrases import phrase_detector
from cortexgraph.hooks.project_settings import parse_settings_text
from cortexgraph.hooks.user_prompt_submit import (
    MAX_ANALYSED_CHARS,
    MAX_TOPIC_TERMS,
    analysed_text,
    analyze_prompt,
)

EVENT = "UserPromptSubmit"
DEEP = 20_000  # far past the parser's recursion limit


def _filler(chars: int, seed: int = 7) -> str:
    """Words that are no topic of any memory, many of them distinct (the worst case for the
    per-word work)."""
    rng = random.Random(seed)
    words: list[str] = []
    size = 0
    while size < chars:
        word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 9)))
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:chars]


@pytest.mark.parametrize(
    "yaml_text",
    [
        "max_inject_chars: " + "[" * DEEP + "]" * DEEP,
        "context_depth: " + "{a: " * DEEP + "1" + "}" * DEEP,
        "- " * DEEP + "x",
    ],
    ids=["flow-sequences", "flow-mappings", "block-sequences"],
)
def test_deeply_nested_settings_fall_back_to_defaults(yaml_text: str) -> None:
    from cortexgraph.hooks.project_settings import PluginSettingsError

    with pytest.raises(PluginSettingsError, match=r"too deeply|not valid YAML"):
        parse_settings_text(f"---\n{yaml_text}\n---\n")


def test_deeply_nested_settings_keep_the_hook_working(run_hook, seeded, project: Path) -> None:
    settings = project / ".claude" / "cortexgraph.local.md"
    settings.parent.mkdir()
    settings.write_text("---\nmax_inject_chars: " + "[" * DEEP + "]" * DEEP + "\n---\n")
    run = run_hook(
        "user-prompt-submit",
        {"hook_event_name": EVENT, "prompt": "what did we decide about authentication?"},
        process=True,
    )
    assert seeded["auth"] in context_of(run, EVENT)  # answered, with the default settings
    assert "using default settings" in run.stderr and "skipped" not in run.stderr


@pytest.mark.parametrize("where", ["end", "start"])
def test_a_one_megabyte_prompt_is_answered(run_hook, seeded, where: str) -> None:
    question = "By the way, what did we decide about authentication for the web app?"
    filler = _filler(1_000_000)
    text = f"{filler}\n\n{question}" if where == "end" else f"{question}\n\n{filler}"
    assert len(text) > 1_000_000
    run = run_hook("user-prompt-submit", {"hook_event_name": EVENT, "prompt": text}, process=True)
    ctx = context_of(run, EVENT)
    assert seeded["auth"] in ctx and len(ctx) <= 2000


def test_a_one_megabyte_save_request_gets_a_bounded_reminder(run_hook, store) -> None:
    text = "Please remember that deploys need two approvals.\n\n" + _filler(1_000_000)
    run = run_hook("user-prompt-submit", {"hook_event_name": EVENT, "prompt": text}, process=True)
    ctx = context_of(run, EVENT)
    assert "save_memory" in ctx and "two approvals" in ctx and len(ctx) <= 2000


class _CountingDetector:
    def __init__(self) -> None:
        self.inner = phrase_detector()
        self.seen: list[int] = []

    def detect(self, text: str):  # PhraseSignals
        self.seen.append(len(text))
        return self.inner.detect(text)


def test_the_analysed_text_is_bounded_whatever_the_prompt() -> None:
    question = "can you recall what we decided about the payment gateway?"
    for text in (_filler(1_000_000) + " " + question, question + " " + _filler(1_000_000)):
        detector = _CountingDetector()
        analysis = analyze_prompt(text, detector)
        assert max(detector.seen) <= MAX_ANALYSED_CHARS
        assert analysis.signals.recall_request
        assert len(analysis.topic_terms) <= MAX_TOPIC_TERMS
        assert {"payment", "gateway"} <= set(analysis.topic_terms)
    short = "what did we decide about authentication?"
    assert analysed_text(short) == short
    assert analyze_prompt(short).topic_terms == ("authentication",)
