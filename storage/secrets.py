"""Secrets are found and redacted before a memory touches disk.

A memory is a line in a plain file that people sync and back up; whatever reaches it also
reaches the write ledger, the embedding cache, the vault and the issues. So the store replaces
every secret it recognises with ``[redacted: <kind>]`` when a record is written
(``StoreConfig.redact_secrets``, setting ``CORTEXGRAPH_REDACT_SECRETS``), and the edges call
``redact_secrets`` on text before they analyse it.

What is recognised (pure Python, no dependency; the formats detect-secrets and gitleaks know
best): AWS access key ids, GitHub, GitLab, Slack and Stripe tokens, Slack webhooks, Google API
keys, OpenAI/Anthropic-style ``sk-`` keys, private key blocks, JWTs, the value of an
assignment to a secret-sounding name (``password=...``, ``secret: ...``, ``api_key=...``),
and a high-entropy word right after such a name ("the token is 9fQ...").
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from cortexgraph.storage.models import Memory, MemoryMeta

_PATTERNS: dict[str, str] = {
    "private-key": (
        r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]{0,20000}?-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----|[\s\S]{0,20000})"
    ),
    "aws-access-key": r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
    "github-token": r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
    "gitlab-token": r"\bgl(?:pat|dt|ptt|rt|cbt|oas)-[A-Za-z0-9_\-]{20,}",
    "slack-token": r"\bxox[abposre]-[A-Za-z0-9-]{10,}",
    "slack-webhook": r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]{20,}",
    "stripe-key": r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b",
    "google-api-key": r"\bAIza[0-9A-Za-z_\-]{35}\b",
    "api-key": r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{32,}",
    "jwt": r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
}
_FOUND = re.compile("|".join(f"(?P<{k.replace('-', '_')}>{p})" for k, p in _PATTERNS.items()))

# A secret-sounding name, then ``=`` or ``:`` and a value (quoted or one word): the value goes.
_NAME = (
    r"(?:password|passwd|passphrase|pwd|secret|client[_\-]?secret|api[_\-]?key|apikey|"
    r"access[_\-]?key|secret[_\-]?key|private[_\-]?key|access[_\-]?token|auth[_\-]?token|"
    r"refresh[_\-]?token|token|credentials?|aws_secret_access_key)"
)
_ASSIGNED = re.compile(
    rf"(?i)(?P<name>\b[\w\-]*{_NAME}\b[\"']?\s*(?:=|:)\s*)"
    r"(?!\[redacted)(?P<value>\"[^\"\n]{3,}\"|'[^'\n]{3,}'|[^\s\"',;]{4,})"
)
_PASSWORDISH = re.compile(r"(?i)pass|pwd")
# "the token is X", "password X", "key: X": a high-entropy word right after such a name.
_AFTER_NAME = re.compile(
    rf"(?i)(?P<name>\b{_NAME}s?\b(?:\s+(?:is|was|are|of|for|to|uses?|=|:))?\s+)"
    r"(?P<value>[A-Za-z0-9+/=_\-\.]{16,})"
)
_KEY_WORD = re.compile(r"(?i)\b(?:key|keys)\s+(?P<value>[A-Za-z0-9+/=_\-]{20,})")


# Every pattern above needs one of these (in lower case); most text holds none, and looking
# for them with ``in`` costs ~2 us where the patterns (or one case-insensitive regex of these)
# cost ~90 us on a sentence.
_TRIGGERS = (
    *("akia", "asia", "abia", "acca", "a3t"),
    *("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    *("glpat-", "gldt-", "glptt-", "glrt-", "glcbt-", "gloas-"),
    *("xox", "hooks.slack", "sk_", "rk_", "pk_", "aiza", "sk-", "-----begin", "eyj"),
    *("pass", "pwd", "secret", "key", "token", "credential"),
)


def _may_hold_secret(text: str) -> bool:
    low = text.lower()
    return any(t in low for t in _TRIGGERS)


@dataclass(frozen=True, slots=True)
class Redaction:
    text: str
    kinds: tuple[str, ...]  # what was redacted, once each, in order of first appearance

    @property
    def redacted(self) -> bool:
        return bool(self.kinds)


def _entropy(word: str) -> float:
    counts = Counter(word)
    return -sum(n / len(word) * math.log2(n / len(word)) for n in counts.values())


def _looks_random(word: str) -> bool:
    """High entropy with letters and digits mixed: a key, not a word or a path."""
    classes = sum(
        (
            any(c.islower() for c in word),
            any(c.isupper() for c in word),
            any(c.isdigit() for c in word),
        )
    )
    return len(word) >= 16 and classes >= 2 and _entropy(word) >= 3.5


def redact_secrets(text: str) -> Redaction:
    """``text`` with every recognised secret replaced by ``[redacted: <kind>]``."""
    if not text or not _may_hold_secret(text):
        return Redaction(text, ())
    kinds: list[str] = []

    def mark(kind: str) -> str:
        kinds.append(kind)
        return f"[redacted: {kind}]"

    text = _FOUND.sub(lambda m: mark(str(m.lastgroup).replace("_", "-")), text)
    text = _ASSIGNED.sub(
        lambda m: (
            m.group("name") + mark("password" if _PASSWORDISH.search(m.group("name")) else "secret")
        ),
        text,
    )

    def entropic(m: re.Match[str]) -> str:
        value = m.group("value")
        if not _looks_random(value):
            return m.group(0)
        return m.group(0)[: m.start("value") - m.start(0)] + mark("high-entropy-secret")

    text = _AFTER_NAME.sub(entropic, text)
    text = _KEY_WORD.sub(entropic, text)
    return Redaction(text, tuple(dict.fromkeys(kinds)))


REDACTED_KEY = "redacted"  # meta.extra: the kinds redacted from the record, kept with it


def _redact_json(value: Any, kinds: list[str]) -> Any:
    if isinstance(value, str):
        r = redact_secrets(value)
        kinds.extend(r.kinds)
        return r.text
    if isinstance(value, list):
        return [_redact_json(v, kinds) for v in value]
    if isinstance(value, dict):
        return {k: _redact_json(v, kinds) for k, v in value.items()}
    return value


def redact_memory(memory: Memory) -> Memory:
    """``memory`` with every secret in its text fields (content, tags, entities, source,
    context, the neighbour's text, the strings in ``meta.extra``) redacted, and the kinds
    listed in ``meta.extra["redacted"]``; the same object when there is none."""
    meta = memory.meta
    plain = [memory.content, *memory.tags, *memory.entities, meta.source or "", meta.context or ""]
    plain.append(getattr(memory, "neighbour_text", None) or "")
    if meta.extra:
        plain.append(str(meta.extra))
    if not _may_hold_secret("\n".join(plain)):
        return memory  # the common case: one cheap look at the text, nothing rebuilt
    kinds: list[str] = []
    content = _redact_json(memory.content, kinds)
    tags = tuple(dict.fromkeys(_redact_json(list(memory.tags), kinds)))
    entities = tuple(dict.fromkeys(_redact_json(list(memory.entities), kinds)))
    source = _redact_json(memory.meta.source, kinds)
    context = _redact_json(memory.meta.context, kinds)
    extra = {
        k: v if k == REDACTED_KEY else _redact_json(v, kinds) for k, v in memory.meta.extra.items()
    }
    changes: dict[str, Any] = {}
    neighbour = getattr(memory, "neighbour_text", None)
    if neighbour is not None:
        changes["neighbour_text"] = _redact_json(neighbour, kinds)
    if not kinds:
        return memory
    before = memory.meta.extra.get(REDACTED_KEY)
    seen = list(before) if isinstance(before, list) else []
    extra[REDACTED_KEY] = list(dict.fromkeys([*seen, *kinds]))
    return replace(
        memory,
        content=content,
        entities=entities,
        meta=MemoryMeta(tags, source, context, extra),
        **changes,
    )


__all__ = ["REDACTED_KEY", "Redaction", "redact_memory", "redact_secrets"]
