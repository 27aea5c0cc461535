"""UserPromptSubmit: recall memories when the user asks about the past; nudge explicit saves.

Runs before every prompt, so it stays light: regex phrase detection (the activation layer's
patterns), and only for a recall or save request a keyword search straight over the JSONL file
(hooks.recall, quick_search). An ordinary prompt imports neither the store nor settings.
No torch, no spaCy, no store lock.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from functools import cache
from typing import Any

from cortexgraph.hooks.contract import HookInput, additional_context, run_hook
from cortexgraph.hooks.phrases import phrase_detector

EVENT = "UserPromptSubmit"
WORD_RE = re.compile(r"[\w][\w'+#.-]*[\w+#]|[\w]")
MIN_PROMPT_CHARS = 12
MIN_PROMPT_WORDS = 3
RECALL_MAX_CHARS = 2000  # about 500 tokens (context_block.RECALL_MAX_CHARS)
# A longer prompt (a paste) is read at its start and its end, where a request to recall or save
# sits; the regexes and the per-word work then cost the same for 1 MB as for 4 KB.
MAX_ANALYSED_CHARS = 4000
MAX_TOPIC_TERMS = 16
TOPIC_WINDOW = (200, 300)  # characters before and after the request that name its topic
# Words that ask for recall but are not a topic ("remind me what we decided" has no topic).
ASKING_WORDS = (
    "remember recall remind decide decided discuss discussed agree agreed mention mentioned "
    "say said tell told choose chose pick picked conclude note noted record recorded settle "
    "settled save saved think thought know again last time memory memories search check look "
    "find bring pull refresh please previously earlier before ago anything something"
)


@cache
def asking_terms() -> frozenset[str]:
    from cortexgraph.storage.text_index import tokenize

    return frozenset(tokenize(ASKING_WORDS))


@cache
def not_tag_terms() -> frozenset[str]:
    from cortexgraph.storage.text_index import tokenize

    return asking_terms() | frozenset(
        tokenize("forget keep mind store write down future reference")
    )


@dataclass(frozen=True, slots=True)
class PromptAnalysis:
    skip_reason: str | None
    signals: Any  # activation.phrases.PhraseSignals, or None when skipped
    topic_terms: tuple[str, ...]  # the prompt's words that name what to look for
    # The words around the request as written, the request phrases taken out: what the running
    # server's search is asked (its embeddings read a sentence better than a bag of words).
    topic_text: str = ""
    # "decision" ("what did we decide about ...", "what's the plan for ..."), "rationale" ("why
    # did we choose ...") or "": the plugin spec's query shaping (hooks.recall.shaped_query).
    query_type: str = ""


_RATIONALE = re.compile(r"\bwhy\s+did\s+(?:we|i)\b")
_DECISION = re.compile(
    r"\b(?:decide|decided|agree|agreed|conclude|concluded|settle|settled|choose|chose|pick|"
    r"picked)\b|\b(?:approach|decision|plan)\b"
)


def query_type(signals: Any) -> str:
    """Which kind of recall the request phrases ask for (the plugin spec's query types)."""
    phrases = " ".join(signals.matched_phrases)
    if _RATIONALE.search(phrases):
        return "rationale"
    return "decision" if _DECISION.search(phrases) else ""


def analysed_text(prompt: str) -> str:
    """The part of ``prompt`` the hook reads: all of it, or its start and end if it is long."""
    if len(prompt) <= MAX_ANALYSED_CHARS:
        return prompt
    half = (MAX_ANALYSED_CHARS - 3) // 2
    return f"{prompt[:half]}\n…\n{prompt[-half:]}"


def analyze_prompt(prompt: str, detector: Any = None) -> PromptAnalysis:
    """Is this prompt a recall or save request, and about what? Pure and fast (regex only)."""
    text = analysed_text(prompt.strip())
    if text.startswith("/"):
        return PromptAnalysis("slash command", None, ())
    if len(text) < MIN_PROMPT_CHARS or len(text.split()) < MIN_PROMPT_WORDS:
        return PromptAnalysis("too short", None, ())
    signals = (detector or phrase_detector()).detect(text)
    if not (signals.recall_request or signals.save_request):
        return PromptAnalysis(None, signals, ())
    from cortexgraph.storage.text_index import tokenize

    not_topic = set(tokenize(" ".join(signals.matched_phrases))) | asking_terms()
    around = _around_request(text, signals)
    topic: list[str] = []
    for word in dict.fromkeys(WORD_RE.findall(around)):
        terms = tokenize(word)
        if terms and not set(terms) & not_topic:
            topic.append(word)
            if len(topic) == MAX_TOPIC_TERMS:
                break
    return PromptAnalysis(
        None, signals, tuple(topic), _without_phrases(around, signals), query_type(signals)
    )


def _without_phrases(text: str, signals: Any) -> str:
    for phrase in sorted(signals.matched_phrases, key=len, reverse=True):
        text = text.replace(phrase.lower(), " ")
    return " ".join(text.split()).strip(" :,.;-")


def _around_request(text: str, signals: Any) -> str:
    """The words near the first request phrase, those after it first (all of a short prompt):
    where its topic is named."""
    lower = text.lower()
    found = [i for i in (lower.find(p) for p in signals.matched_phrases) if i >= 0]
    if not found:
        return lower
    before, after = TOPIC_WINDOW
    start = min(found)
    return f"{lower[start : start + after]} {lower[max(0, start - before) : start]}"


def leans_on_earlier_turns(prompt: str, analysis: PromptAnalysis) -> bool:
    """No topic of its own, or a short reply ("yes, remember that")."""
    from cortexgraph.activation.context import is_follow_up

    return not analysis.topic_terms or is_follow_up(prompt)


def handle(inp: HookInput, now: float | None = None) -> dict[str, Any] | None:
    prompt = analysed_text(inp.prompt.strip())
    analysis = analyze_prompt(prompt)
    if analysis.skip_reason or analysis.signals is None:
        return None
    signals = analysis.signals
    if not (signals.recall_request or signals.save_request):
        return None
    if inp.transcript_path and leans_on_earlier_turns(prompt, analysis):
        # "what did we decide last time?", "yes, remember that": the topic is in the turns
        # before it (ConversationContext over the transcript).
        from cortexgraph.hooks.conversation import with_earlier_turns

        joined = with_earlier_turns(prompt, inp.transcript_path)
        if joined != prompt:
            prompt, analysis = joined, analyze_prompt(joined)
            signals = analysis.signals or signals
    from cortexgraph.hooks.recall import recall_context, save_reminder
    from cortexgraph.hooks.runtime import load_runtime

    runtime = load_runtime(inp)
    now = time.time() if now is None else now
    parts: list[str] = []
    budget = min(runtime.plugin.max_inject_chars, RECALL_MAX_CHARS)
    if signals.save_request and runtime.plugin.prompt_to_save:
        parts.append(save_reminder(prompt, runtime, budget // 2))
    if signals.recall_request and runtime.plugin.detect_recall_patterns and analysis.topic_terms:
        room = budget - sum(len(p) + 2 for p in parts)
        block = recall_context(runtime, analysis, now, room) if room >= 200 else None
        if block:
            parts.append(block)
    if not parts:
        return None
    return additional_context(EVENT, "\n\n".join(parts))


def main() -> int:
    return run_hook(EVENT, handle)


__all__ = ["PromptAnalysis", "analysed_text", "analyze_prompt", "handle", "main"]
