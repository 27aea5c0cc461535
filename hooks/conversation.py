"""The turns before a prompt, from Claude Code's transcript, for prompts that lean on them.

"what did we decide last time?" or "yes, remember that" names no topic of its own: the user's
previous messages do. The activation layer's ConversationContext keeps the last turns and joins
the latest ones with the prompt, as the MCP analyze tools do with their per-session window.
Read only for a recall or save request with no topic (the transcript can be megabytes).
"""

from __future__ import annotations

from cortexgraph.activation.context import ConversationContext
from cortexgraph.hooks.transcript import read_turns

WINDOW_TURNS = 10  # = CORTEXGRAPH_CONTEXT_WINDOW_SIZE's default
JOINED_TURNS = 2  # earlier user messages read with the prompt


def with_earlier_turns(prompt: str, transcript_path: str) -> str:
    """The prompt preceded by the user's last messages in the transcript (the prompt alone
    when there are none or no transcript)."""
    if not transcript_path:
        return prompt
    window = ConversationContext(max_turns=WINDOW_TURNS)
    for turn in read_turns(transcript_path):
        if turn.role == "user" and turn.text.strip():
            window.add(turn.text.strip())
    return window.window(prompt, turns=JOINED_TURNS)


__all__ = ["JOINED_TURNS", "WINDOW_TURNS", "with_earlier_turns"]
