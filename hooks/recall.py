"""Building UserPromptSubmit's context: recalled memories and save reminders.

Kept apart from user_prompt_submit so that a prompt with no recall or save intent (most of
them) never imports the store at all.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections import Counter
from typing import Any

from cortexgraph.hooks.context_block import Entry, clip, fenced_block
from cortexgraph.hooks.long_term import note_entry, recalled_entry, record_entry
from cortexgraph.hooks.quick_search import RawStoreRecords
from cortexgraph.hooks.runtime import HookRuntime
from cortexgraph.hooks.user_prompt_submit import WORD_RE, PromptAnalysis, not_tag_terms
from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.storage.models import Memory
from cortexgraph.storage.secrets import redact_secrets
from cortexgraph.storage.text_index import tokenize

RECALL_TOP_K = 5
# Below this share of the best hit's relevance a match is noise, not a memory of the topic.
MIN_RELEVANCE = 0.35
SAVE_CONTENT_CHARS = 500
NO_ANSWER = "cortexgraph: the MCP server did not answer in time; recalled by keywords instead"


def recall_context(
    runtime: HookRuntime, analysis: PromptAnalysis, now: float, limit: int
) -> str | None:
    query, asked = shaped_query(analysis)
    entries = server_entries(runtime, asked) if runtime.plugin.ask_running_server else None
    if entries is None:  # no server running for this store: keywords over the JSONL file
        records = RawStoreRecords.read(runtime.storage_path, runtime.store_config)
        topic = " ".join(analysis.topic_terms)
        hits = records.search(topic, top_k=RECALL_TOP_K, now=now, min_relevance=MIN_RELEVANCE)
        if hits and query != topic:
            # The shaping words order what the topic found; they never find anything alone.
            shaped = records.search(query, top_k=max(len(records), 1), now=now)
            rank = {h.memory.id: i for i, h in enumerate(shaped)}
            hits = sorted(hits, key=lambda h: rank.get(h.memory.id, len(rank)))
        redact = runtime.store_config.redact_secrets
        entries = [
            recalled_entry(h.memory, f"match {h.score:.2f}", runtime.vault, redact=redact)
            for h in hits
        ]
    if not entries:
        return None
    return fenced_block(
        f"cortexgraph recall for: {' '.join(analysis.topic_terms)}",
        [("", entries)],
        max_chars=limit,
        preview_chars=runtime.plugin.preview_chars,
        footer="If you use one of these memories, call observe_memory_usage with its id.",
    )


# The plugin spec's query shaping: a decision or rationale question also looks for the words
# such memories are written with ("we decided ...", "... because ...").
SHAPING = {
    "decision": ("decision", "decided decision chose agreed"),
    "rationale": ("rationale why", "because reason why chose decided"),
}


def shaped_query(analysis: PromptAnalysis) -> tuple[str, str]:
    """(keywords for the store's own search, text for the running server's search)."""
    keywords = " ".join(analysis.topic_terms)
    asked = analysis.topic_text or keywords
    prefix, extra = SHAPING.get(analysis.query_type, ("", ""))
    if not prefix:
        return keywords, asked
    return f"{keywords} {extra}", f"{prefix} {asked}"


def server_entries(runtime: HookRuntime, query: str) -> list[Entry] | None:
    """The running MCP server's ranking (search_unified: BM25 + embeddings over memories, and
    the vault's notes), or None when no server has this store open or it does not answer in
    time."""
    from cortexgraph.recall_endpoint import ask_running_server, endpoint_path

    reply = ask_running_server(runtime.storage_path, query, RECALL_TOP_K)
    if reply is None:
        path = endpoint_path(runtime.storage_path)
        if path is not None and path.exists():  # a server is there but busy, or one was killed
            print(NO_ANSWER, file=sys.stderr)
        return None
    entries: list[Entry] = []
    for item in reply.results:
        label = f"match {item.score:.2f}"
        memory = None
        # a record this version cannot read: its note, if any, stands alone
        with contextlib.suppress(CortexGraphError, ValueError, TypeError, KeyError):
            memory = Memory.from_json(item.memory) if item.memory is not None else None
        note = item.note
        if note is not None:  # long-term: what the note says now
            redact = runtime.store_config.redact_secrets
            entries.append(note_entry(memory, label, note.path, note.text, redact=redact))
        elif memory is not None:
            entries.append(record_entry(memory, label))
    return entries


def save_reminder(prompt: str, runtime: HookRuntime, limit: int) -> str:
    """A reminder with pre-filled save_memory arguments (JSON, so the prompt stays data).
    Secrets in the prompt are redacted here too (storage.secrets): the hook's output is a
    transcript others may read."""
    if runtime.store_config.redact_secrets:
        prompt = redact_secrets(prompt).text
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
    counts = Counter(w for w in WORD_RE.findall(prompt.lower()) if len(w) > 3 and w.isalpha())
    for word in list(counts):
        terms = set(tokenize(word))
        if not terms or terms & not_tag_terms():
            del counts[word]
    tags = [project.lower()] if project else []
    tags += [w for w, _ in counts.most_common(3) if w not in tags]
    return tags[:4]


__all__ = ["recall_context", "save_reminder", "server_entries", "shaped_query", "suggest_tags"]
