"""Reading a Claude Code transcript (JSONL): what the user said, and which tools were called.

The format is Claude Code's, not ours, so every field is optional here: a line we cannot read is
skipped, never an error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_TRANSCRIPT_BYTES = 4_000_000  # read only the tail of a very long session


@dataclass(frozen=True, slots=True)
class Turn:
    role: str  # "user" | "assistant"
    text: str
    tool_calls: tuple[str, ...] = ()  # tool names the assistant called in this entry


def read_turns(path: str | Path) -> list[Turn]:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - MAX_TRANSCRIPT_BYTES))
            data = f.read()
    except OSError:
        return []
    return list(_turns(data.split(b"\n")))


def _turns(lines: list[bytes]) -> Iterator[Turn]:
    for line in lines:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        message = obj.get("message")
        if not isinstance(message, dict):
            continue
        role = message.get("role") or obj.get("type")
        if role not in ("user", "assistant"):
            continue
        text, tools = _content(message.get("content"))
        if text or tools:
            yield Turn(role, text, tools)


def _content(content: Any) -> tuple[str, tuple[str, ...]]:
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        return "", ()
    texts: list[str] = []
    tools: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use" and isinstance(block.get("name"), str):
            tools.append(block["name"])
    return "\n".join(texts), tuple(tools)


__all__ = ["Turn", "read_turns"]
