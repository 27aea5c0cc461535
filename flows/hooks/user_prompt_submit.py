"""UserPromptSubmit: recall memories when the user asks about the past; nudge explicit saves.

Runs before every prompt, so it stays light: regex phrase detection (activation.phrases), then
a keyword search straight over the JSONL file (quick_search). No torch, no spaCy, no store lock.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from flows.hooks.context_block import RECALL_MAX_CHARS, Entry, clip, fenced_block
from flows.hooks.contract import HookInput, additional_context, run_hook
from flows.hooks.phrases import phrase_detector
from flows.hooks.quick_search import StoreSnapshot
from flows.hooks.runtime import HookRuntime, load_runtime
from storage.text_index import tokenize

EVENT = "UserPromptSubmit"
_WORD = re.compile(r"[\w][\w'+#.-]*[\w+#]|[\w]")
MIN_PROMPT_CHARS = 12
MIN_PROMPT_WORDS = 3
RECALL_TOP_K = 5
# Below this share of the best hit's relevance a match is noise, not a memory of the topic.
MIN_RELEVANCE = 0.35
SAVE_CONTENT_CHARS = 500
# Words that ask for recall but are not a topic ("remind me what we decided" has no topic).
_ASKING = frozenset(
    tokenize(
        "remember recall remind decide decided discuss discussed agree agreed mention mentioned "
        "say said tell told choose chose pick picked conclude note noted record recorded settle "
        "settled save saved think thought know again last time memory memories search check look "
        "find bring pull refresh please"
    )
)
_NOT_TAGS = _ASKING | frozenset(tokenize("forget keep mind store write down future reference"))


@dataclass(frozen=True, slots=True)
class PromptAnalysis:
    skip_reason: str | None
    signals: Any  # activation.phrases.PhraseSignals, or None when skipped
    topic_terms: tuple[str, ...]  # the prompt's words that name what to look for


def analyze_prompt(prompt: str, detector: Any = None) -> PromptAnalysis:
    """Is this prompt a recall or save request, and about what? Pure and fast (regex only)."""
    text = prompt.strip()
    if text.startswith("/"):
        return PromptAnalysis("slash command", None, ())
    if len(text) < MIN_PROMPT_CHARS or len(text.split()) < MIN_PROMPT_WORDS:
        return PromptAnalysis("too short", None, ())
    signals = (detector or phrase_detector()).detect(text)
    not_topic = set(tokenize(" ".join(signals.matched_phrases))) | _ASKING
    topic: list[str] = []
    for word in dict.fromkeys(_WORD.findall(text.lower())):
        terms = tokenize(word)
        if terms and not set(terms) & not_topic:
            topic.append(word)
    return PromptAnalysis(None, signals, tuple(topic))


def recall_context(
    runtime: HookRuntime, analysis: PromptAnalysis, now: float, limit: int
) -> str | None:
    snapshot = StoreSnapshot.read(runtime.storage_path, runtime.store_config)
    hits = snapshot.search(" ".join(analysis.topic_terms), top_k=RECALL_TOP_K, now=now,
                           min_relevance=MIN_RELEVANCE)  # fmt: skip
    if not hits:
        return None
    entries = [Entry(h.memory, f"match {h.score:.2f}") for h in hits]
    return fenced_block(
        f"cortexgraph recall for: {' '.join(analysis.topic_terms)}",
        [("", entries)],
        max_chars=limit,
        preview_chars=runtime.plugin.preview_chars,
        footer="If you use one of these memories, call observe_memory_usage with its id.",
    )


def save_reminder(prompt: str, runtime: HookRuntime, limit: int) -> str:
    """A reminder with pre-filled save_memory arguments (JSON, so the prompt stays data)."""
    params: dict[str, Any] = {
        "content": clip(" ".join(prompt.split()), SAVE_CONTENT_CHARS),
        "tags": suggest_tags(prompt, runtime.project_name),
        "source": "claude-code",
    }
    if runtime.project_name:
        params["context"] = f"project {runtime.project_name}"
    text = (
        "The user explicitly asked to remember something. Save it with the cortexgraph "
        "save_memory tool; rewrite content as a self-contained statement and adjust tags. "
        "Suggested arguments: " + json.dumps(params, ensure_ascii=False)
    )
    return clip(text, limit)


def suggest_tags(prompt: str, project: str) -> list[str]:
    counts = Counter(w for w in _WORD.findall(prompt.lower()) if len(w) > 3 and w.isalpha())
    for word in list(counts):
        terms = set(tokenize(word))
        if not terms or terms & _NOT_TAGS:
            del counts[word]
    tags = [project.lower()] if project else []
    tags += [w for w, _ in counts.most_common(3) if w not in tags]
    return tags[:4]


def handle(inp: HookInput, now: float | None = None) -> dict[str, Any] | None:
    analysis = analyze_prompt(inp.prompt)
    if analysis.skip_reason or analysis.signals is None:
        return None
    signals = analysis.signals
    if not (signals.recall_request or signals.save_request):
        return None
    runtime = load_runtime(inp)
    now = time.time() if now is None else now
    parts: list[str] = []
    budget = min(runtime.plugin.max_inject_chars, RECALL_MAX_CHARS)
    if signals.save_request and runtime.plugin.prompt_to_save:
        parts.append(save_reminder(inp.prompt, runtime, budget // 2))
    if (signals.recall_request and runtime.plugin.detect_recall_patterns
            and analysis.topic_terms):  # fmt: skip
        room = budget - sum(len(p) + 2 for p in parts)
        block = recall_context(runtime, analysis, now, room) if room >= 200 else None
        if block:
            parts.append(block)
    if not parts:
        return None
    return additional_context(EVENT, "\n\n".join(parts))


def main() -> int:
    return run_hook(EVENT, handle)


__all__ = ["PromptAnalysis", "analyze_prompt", "handle", "main", "suggest_tags"]
