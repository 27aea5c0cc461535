"""Prompt templates the host model runs; their results come back through ``save_memory``.

Each asks for one self-contained fact per line, with entities, so that the saved memories are
searchable, linkable in the graph and eligible for supersede detection.
"""

from __future__ import annotations

from cortexgraph.storage.errors import InvalidInputError

MAX_INPUT_CHARS = 200_000

_FACT_RULES = """\
Rules for every fact:
- One fact per line, written so it stands on its own (names, not pronouns; absolute dates).
- Keep decisions, preferences, facts about people, projects, tools, dates and numbers.
- Leave out small talk, secrets (passwords, keys, tokens) and anything true only right now.
- If a fact replaces something said before ("now", "moved to", "instead of"), say what it
  replaces; pass the old memory's id as `supersedes` if you know it, or call memory_forget
  with action="correct".
- Call save_memory once per fact with `entities` (people, projects, tools, places) and `tags`."""

EXTRACT_FACTS = """\
Extract the durable facts from the text below and save each with save_memory.

{rules}

Text:
<<<
{text}
>>>"""

COMPRESS_SESSION = """\
Compress this conversation into at most {max_facts} memories for later sessions.
First call memory_retrieve with the session's main topic to see what is already known; do not
save what is already there. Prefer decisions and their reasons, open questions and next steps.

{rules}

Conversation:
<<<
{text}
>>>"""

CONSOLIDATE_EPOCH = """\
Consolidate what was learned about "{topic}" during {period}.
1. Call memory_retrieve with query "{topic}", token_budget {budget} and include_history=true.
2. Merge facts that say the same thing into one memory (save_memory), then call memory_forget
   with action="correct" or "deprecate" on the ones it replaces; never delete history.
3. Mark the few facts that should always be in context with set_core_memory.
4. Reply with a short summary: memories saved, corrected, deprecated, marked core.

{rules}"""


def _text(text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError("text must be a non-empty string")
    if len(text) > MAX_INPUT_CHARS:
        raise InvalidInputError(
            f"text is {len(text):,} characters; split it (max {MAX_INPUT_CHARS:,})"
        )
    return text.strip()


def extract_facts(text: str) -> str:
    return EXTRACT_FACTS.format(rules=_FACT_RULES, text=_text(text))


def compress_session(text: str, max_facts: int = 10) -> str:
    if not 1 <= max_facts <= 100:
        raise InvalidInputError("max_facts must be between 1 and 100")
    return COMPRESS_SESSION.format(rules=_FACT_RULES, text=_text(text), max_facts=max_facts)


def consolidate_epoch(topic: str, period: str = "the last week", budget: int = 3000) -> str:
    if not topic.strip():
        raise InvalidInputError("topic must be a non-empty string")
    return CONSOLIDATE_EPOCH.format(
        rules=_FACT_RULES, topic=topic.strip(), period=period, budget=budget
    )


__all__ = ["compress_session", "consolidate_epoch", "extract_facts"]
