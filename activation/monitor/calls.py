"""One observed tool call, reduced to what the detectors compare, and the text normalisation.

A call keeps its arguments as canonical text (the parts that say what was done: a Bash command,
an edited file and its strings), an outcome key (the normalised result, so "same call, same
result" can be told from "same call, new result"), and for failures an error signature: the
error lines with paths, numbers, hashes and ids stripped, so the same failure at another line
or in another temp dir is still the same failure.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ARGS_CHARS = 600
EXCERPT_CHARS = 400
MAX_ERROR_LINES = 30

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
_HEX = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b", re.I)
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\w.~@+-]*[/\\])+[\w.@+-]*")
_NUM = re.compile(r"(?<![A-Za-z_])[-+]?(?:0x[0-9a-f]+|\d+(?:[.,:]\d+)*)", re.I)
_WS = re.compile(r"\s+")
_ERRORISH = re.compile(
    r"error|exception|traceback|fail|fatal|denied|not found|no such|cannot|can't|could not|"
    r"refused|timed out|timeout|panic|abort|invalid|unable|rejected|conflict|✗|❌",
    re.I,
)
# Tools whose calls change files: an edit between two runs is a fix attempt, not a blind retry.
MUTATING_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})


def normalize_text(text: str) -> str:
    """Lower-case text with paths, ids, hashes and numbers replaced by placeholders."""
    text = _ANSI.sub("", text)
    text = _UUID.sub("<id>", text)
    text = _PATH.sub("<path>", text)
    text = _HEX.sub("<hash>", text)
    text = _NUM.sub("<n>", text)
    return _WS.sub(" ", text).strip().lower()


def short_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=6).hexdigest()


def error_lines(text: str) -> list[str]:
    """The lines of ``text`` that look like errors, in order (falls back to the last line)."""
    lines = [ln.strip() for ln in _ANSI.sub("", text).splitlines() if ln.strip()]
    found = [ln for ln in lines if _ERRORISH.search(ln)]
    return found or lines[-1:]


def error_signature(text: str) -> str:
    """A key equal for the same failure: the set of normalised error lines, hashed."""
    lines = sorted({normalize_text(ln)[:300] for ln in error_lines(text)[-MAX_ERROR_LINES:]})
    return short_hash("\n".join(lines)) if lines else ""


def tokens(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[\w.@/-]+", text.lower()))


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard overlap of two token sets (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass(frozen=True, slots=True)
class ToolCall:
    ts: float
    tool: str
    args: str  # canonical argument text, clipped
    target: str = ""  # what it acted on (file, command), for messages
    failed: bool = False
    error_sig: str = ""
    excerpt: str = ""  # salient output lines (errors first), clipped; sequences match on it
    outcome: str = ""  # hash of the normalised result

    @property
    def mutating(self) -> bool:
        return self.tool in MUTATING_TOOLS

    @property
    def arg_tokens(self) -> frozenset[str]:
        return tokens(self.args)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"ts": self.ts, "tool": self.tool, "args": self.args}
        for key in ("target", "error_sig", "excerpt", "outcome"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        if self.failed:
            data["failed"] = True
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolCall:
        return cls(
            ts=float(data["ts"]),
            tool=str(data["tool"]),
            args=str(data.get("args", "")),
            target=str(data.get("target", "")),
            failed=bool(data.get("failed", False)),
            error_sig=str(data.get("error_sig", "")),
            excerpt=str(data.get("excerpt", "")),
            outcome=str(data.get("outcome", "")),
        )


def canonical_args(tool: str, tool_input: Mapping[str, Any]) -> tuple[str, str]:
    """(argument text, target) for a tool's input; descriptions and timeouts are left out."""
    get = tool_input.get
    if tool == "Bash":
        cmd = _WS.sub(" ", str(get("command", ""))).strip()
        return cmd[:ARGS_CHARS], cmd[:160]
    path = str(get("file_path") or get("notebook_path") or get("path") or "")
    if tool == "Edit":
        text = f"{path} {get('old_string', '')} => {get('new_string', '')}"
    elif tool == "MultiEdit":
        edits = get("edits")
        if not isinstance(edits, list):
            edits = []
        parts = [
            f"{e.get('old_string', '')} => {e.get('new_string', '')}"
            for e in edits
            if isinstance(e, Mapping)
        ]
        text = f"{path} " + " ; ".join(parts)
    elif tool == "Write":
        content = str(get("content", ""))
        text = f"{path} {short_hash(content)} {content[:400]}"
    else:
        skip = {"description", "timeout"}
        items = {k: v for k, v in sorted(tool_input.items()) if k not in skip}
        text = json.dumps(items, ensure_ascii=False, sort_keys=True, default=str)
        path = path or str(get("url") or get("pattern") or get("query") or "")
    return _WS.sub(" ", text).strip()[:ARGS_CHARS], path[:160]


def response_text(response: Any) -> str:
    """The readable text of a tool response (Bash stdout/stderr, MCP text blocks, strings)."""
    if response is None:
        return ""
    if isinstance(response, str):
        return response
    if isinstance(response, Mapping):
        parts = [
            str(response[k])
            for k in ("stdout", "stderr", "error", "output", "message")
            if isinstance(response.get(k), str) and response[k]
        ]
        content = response.get("content")
        if isinstance(content, list):
            parts += [str(c.get("text", "")) for c in content if isinstance(c, Mapping)]
        if parts:
            return "\n".join(parts)
    if isinstance(response, list):
        return "\n".join(response_text(r) for r in response)
    return json.dumps(response, ensure_ascii=False, default=str)[:4000]


def response_failed(response: Any) -> bool:
    if not isinstance(response, Mapping):
        return False
    if response.get("is_error") is True or response.get("isError") is True:
        return True
    if response.get("interrupted") is True:
        return True
    for key in ("exit_code", "exitCode", "returnCode", "return_code"):
        code = response.get(key)
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            return True
    return False


def make_call(
    tool: str,
    tool_input: Mapping[str, Any] | None,
    response: Any = None,
    *,
    ts: float,
    error: str | None = None,
    failed: bool | None = None,
) -> ToolCall:
    """Reduce one tool call (a hook payload, or what the model reports) to a ``ToolCall``."""
    args, target = canonical_args(tool, tool_input or {})
    text = response_text(response)
    if error:
        text = f"{error}\n{text}" if text else error
    is_failed = (bool(error) or response_failed(response)) if failed is None else failed
    lines = error_lines(text) if text else []
    excerpt = " | ".join(dict.fromkeys(lines[-5:]))[:EXCERPT_CHARS]
    outcome = short_hash(("F " if is_failed else "") + normalize_text(text[-4000:]))
    return ToolCall(
        ts=float(ts),
        tool=tool,
        args=args,
        target=target,
        failed=is_failed,
        error_sig=error_signature(text) if is_failed and text else "",
        excerpt=excerpt,
        outcome=outcome,
    )


__all__ = [
    "MUTATING_TOOLS",
    "ToolCall",
    "canonical_args",
    "error_lines",
    "error_signature",
    "make_call",
    "normalize_text",
    "response_text",
    "similarity",
    "tokens",
]
