"""The beads issue record (``.beads/issues.jsonl``), as defined by beads' Go ``types.Issue``.

One JSON object per line. Field names and omit-when-empty rules follow the Go struct tags;
``_type: "issue"`` marks issue lines in newer exports and may be absent in older ones. Fields
this module does not type (beads has many: tombstones, gates, agent fields ...) are kept in
``BeadsIssue.extra`` and written back unchanged, so a rewrite never loses what bd wrote.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cortexgraph.storage.beads.errors import IssueRecordError
from cortexgraph.storage.json_text import dumps_compact

STATUSES = ("open", "in_progress", "blocked", "deferred", "closed")  # both trackers', one list
# The metadata key holding an issue's dedupe key (``create(..., dedupe_key=...)``).
DEDUPE_KEY = "dedupe_key"
# Statuses bd itself may write; read and preserved, never set by us.
BD_ONLY_STATUSES = ("tombstone", "pinned", "hooked")
ISSUE_TYPES = ("bug", "feature", "task", "epic", "chore")
RECORD_TYPE = "issue"
# Characters str.splitlines() (and so many editors and tools) break lines on, besides "\n" and
# "\r" (which json.dumps always escapes, and which outside strings is JSON whitespace). json.dumps
# escapes the control characters among them too but, with ensure_ascii=False, writes U+0085,
# U+2028 and U+2029 raw; all are escaped so that a record is one line to any reader. So are
# lone surrogates (a JSON "\\udc80" reads as one), which have no UTF-8 encoding.
LINE_BREAK_CHARS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# str.translate with a dict visits every character in Python-level lookups (~90 us a merge
# issue's line); the search is one C scan, and almost no line has anything to escape: the
# few that do are escaped by the same pattern's sub.
_UNSAFE = re.compile(f"[{LINE_BREAK_CHARS}\ud800-\udfff]")

_TIME_RE = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|z|[+-]\d{2}:\d{2})?$"
)


def parse_time(value: Any, field_name: str = "time") -> datetime:
    """RFC 3339 (bd writes nanoseconds; Python keeps microseconds) to an aware UTC datetime."""
    if not isinstance(value, str):
        raise IssueRecordError(f"{field_name} must be an RFC 3339 string, got {value!r}")
    m = _TIME_RE.match(value.strip())
    if not m:
        raise IssueRecordError(f"{field_name} is not an RFC 3339 time: {value!r}")
    date, clock, frac, zone = m.groups()
    frac = (frac or "")[:6].ljust(6, "0")
    zone = "+00:00" if zone in (None, "Z", "z") else zone
    try:
        dt = datetime.fromisoformat(f"{date}T{clock}.{frac}{zone}")
    except ValueError as e:
        raise IssueRecordError(f"{field_name} is not a valid time: {value!r} ({e})") from None
    return dt.astimezone(UTC)


@functools.lru_cache(maxsize=8192)  # every change re-writes its issue's created_at
def format_time(dt: datetime) -> str:
    """UTC RFC 3339 with trailing fractional zeros trimmed, as Go's time.Time marshals."""
    dt = dt.astimezone(UTC)
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if dt.microsecond:
        text += f".{dt.microsecond:06d}".rstrip("0")
    return text + "Z"


def time_from_timestamp(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


@dataclass(frozen=True, slots=True)
class Dependency:
    """``types.Dependency``: this issue depends on ``depends_on_id`` (type e.g. blocks)."""

    issue_id: str
    depends_on_id: str
    type: str = "blocks"
    created_at: datetime | None = None
    created_by: str = ""
    metadata: str = ""  # a JSON blob as a string, as in beads
    thread_id: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Comment:
    """``types.Comment``."""

    id: int
    issue_id: str
    author: str
    text: str
    created_at: datetime | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BeadsIssue:
    """One beads issue. Satisfies agents.protocols.IssueView. Treat ``metadata`` as read-only."""

    id: str
    title: str
    created_at: datetime
    updated_at: datetime
    status: str = "open"
    labels: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    assignee: str | None = None
    description: str = ""
    priority: int = 2
    issue_type: str = "task"
    closed_at: datetime | None = None
    close_reason: str = ""
    created_by: str = ""
    design: str = ""
    acceptance_criteria: str = ""
    notes: str = ""
    estimated_minutes: int | None = None
    external_ref: str | None = None
    dependencies: tuple[Dependency, ...] = ()
    comments: tuple[Comment, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)  # every other field, verbatim


# JSON name -> how it is read; order is beads' struct order, which is also the write order.
_TYPED = (
    "id",
    "title",
    "description",
    "design",
    "acceptance_criteria",
    "notes",
    "status",
    "priority",
    "issue_type",
    "assignee",
    "estimated_minutes",
    "created_at",
    "created_by",
    "updated_at",
    "closed_at",
    "close_reason",
    "external_ref",
    "labels",
    "dependencies",
    "comments",
    "metadata",
)
_SKIP_ON_READ = frozenset({*_TYPED, "_type"})


def _str(rec: Mapping[str, Any], key: str, default: str = "") -> str:
    value = rec.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise IssueRecordError(f"{key} must be a string, got {value!r}")
    return value


def _opt_int(rec: Mapping[str, Any], key: str) -> int | None:
    value = rec.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise IssueRecordError(f"{key} must be an integer, got {value!r}")
    return value


def _opt_time(rec: Mapping[str, Any], key: str) -> datetime | None:
    value = rec.get(key)
    return None if value in (None, "") else parse_time(value, key)


def _dependency(raw: Any, issue_id: str) -> Dependency:
    if not isinstance(raw, dict):
        raise IssueRecordError(f"a dependency must be an object, got {raw!r}")
    known = {"issue_id", "depends_on_id", "type", "created_at", "created_by", "metadata"}
    known.add("thread_id")
    depends_on = _str(raw, "depends_on_id")
    if not depends_on:
        raise IssueRecordError(f"dependency without depends_on_id: {raw!r}")
    return Dependency(
        issue_id=_str(raw, "issue_id", issue_id) or issue_id,
        depends_on_id=depends_on,
        type=_str(raw, "type", "blocks") or "blocks",
        created_at=_opt_time(raw, "created_at"),
        created_by=_str(raw, "created_by"),
        metadata=_str(raw, "metadata"),
        thread_id=_str(raw, "thread_id"),
        extra={k: v for k, v in raw.items() if k not in known},
    )


def _comment(raw: Any, issue_id: str) -> Comment:
    if not isinstance(raw, dict):
        raise IssueRecordError(f"a comment must be an object, got {raw!r}")
    known = {"id", "issue_id", "author", "text", "created_at"}
    return Comment(
        id=_opt_int(raw, "id") or 0,
        issue_id=_str(raw, "issue_id", issue_id) or issue_id,
        author=_str(raw, "author"),
        text=_str(raw, "text"),
        created_at=_opt_time(raw, "created_at"),
        extra={k: v for k, v in raw.items() if k not in known},
    )


def issue_from_record(rec: Mapping[str, Any]) -> BeadsIssue:
    """A parsed JSON object to a BeadsIssue; missing fields get beads' import defaults."""
    if not isinstance(rec, Mapping):
        raise IssueRecordError(f"an issue record must be a JSON object, got {type(rec).__name__}")
    kind = rec.get("_type", RECORD_TYPE)
    if kind != RECORD_TYPE:
        raise IssueRecordError(f"not an issue record (_type={kind!r})")
    issue_id = _str(rec, "id")
    if not issue_id:
        raise IssueRecordError("issue record without an id")
    labels = rec.get("labels") or []
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise IssueRecordError(f"{issue_id}: labels must be a list of strings")
    deps = rec.get("dependencies") or []
    comments = rec.get("comments") or []
    if not isinstance(deps, list) or not isinstance(comments, list):
        raise IssueRecordError(f"{issue_id}: dependencies and comments must be lists")
    extra = {k: v for k, v in rec.items() if k not in _SKIP_ON_READ}
    metadata = rec.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        extra["metadata"] = metadata  # beads allows any JSON here; keep a non-object verbatim
        metadata = None
    created = _opt_time(rec, "created_at")
    updated = _opt_time(rec, "updated_at")
    if created is None:
        raise IssueRecordError(f"{issue_id}: created_at is required")
    priority = _opt_int(rec, "priority")
    external_ref = rec.get("external_ref")
    if external_ref is not None and not isinstance(external_ref, str):
        raise IssueRecordError(f"{issue_id}: external_ref must be a string")
    try:
        return BeadsIssue(
            id=issue_id,
            title=_str(rec, "title"),
            description=_str(rec, "description"),
            design=_str(rec, "design"),
            acceptance_criteria=_str(rec, "acceptance_criteria"),
            notes=_str(rec, "notes"),
            status=_str(rec, "status", "open") or "open",
            priority=2 if priority is None else priority,
            issue_type=_str(rec, "issue_type", "task") or "task",
            assignee=_str(rec, "assignee") or None,
            estimated_minutes=_opt_int(rec, "estimated_minutes"),
            created_at=created,
            created_by=_str(rec, "created_by"),
            updated_at=updated or created,
            closed_at=_opt_time(rec, "closed_at"),
            close_reason=_str(rec, "close_reason"),
            external_ref=external_ref,
            labels=tuple(labels),
            dependencies=tuple(_dependency(d, issue_id) for d in deps),
            comments=tuple(_comment(c, issue_id) for c in comments),
            metadata=dict(metadata or {}),
            extra=extra,
        )
    except IssueRecordError as e:
        raise IssueRecordError(f"{issue_id}: {e}") from None


def _dependency_record(d: Dependency) -> dict[str, Any]:
    out: dict[str, Any] = {"issue_id": d.issue_id, "depends_on_id": d.depends_on_id, "type": d.type}
    if d.created_at is not None:
        out["created_at"] = format_time(d.created_at)
    for key in ("created_by", "metadata", "thread_id"):
        if getattr(d, key):
            out[key] = getattr(d, key)
    return {**out, **{k: v for k, v in d.extra.items() if k not in out}}


def _comment_record(c: Comment) -> dict[str, Any]:
    out: dict[str, Any] = {"id": c.id, "issue_id": c.issue_id, "author": c.author, "text": c.text}
    if c.created_at is not None:
        out["created_at"] = format_time(c.created_at)
    return {**out, **{k: v for k, v in c.extra.items() if k not in out}}


def issue_to_record(issue: BeadsIssue) -> dict[str, Any]:
    """The export record: ``_type`` first, beads' field order, empty optional fields omitted."""
    out: dict[str, Any] = {"_type": RECORD_TYPE, "id": issue.id, "title": issue.title}
    out["description"] = issue.description
    for key in ("design", "acceptance_criteria", "notes"):
        if getattr(issue, key):
            out[key] = getattr(issue, key)
    out["status"] = issue.status
    out["priority"] = issue.priority
    out["issue_type"] = issue.issue_type
    if issue.assignee:
        out["assignee"] = issue.assignee
    if issue.estimated_minutes is not None:
        out["estimated_minutes"] = issue.estimated_minutes
    out["created_at"] = format_time(issue.created_at)
    if issue.created_by:
        out["created_by"] = issue.created_by
    out["updated_at"] = format_time(issue.updated_at)
    if issue.closed_at is not None:
        out["closed_at"] = format_time(issue.closed_at)
    if issue.close_reason:
        out["close_reason"] = issue.close_reason
    if issue.external_ref is not None:
        out["external_ref"] = issue.external_ref
    if issue.labels:
        out["labels"] = list(issue.labels)
    if issue.dependencies:
        out["dependencies"] = [_dependency_record(d) for d in issue.dependencies]
    if issue.comments:
        out["comments"] = [_comment_record(c) for c in issue.comments]
    if issue.metadata:
        out["metadata"] = dict(issue.metadata)
    for key, value in issue.extra.items():
        out.setdefault(key, value)  # typed fields win; a non-object metadata survives here
    return out


def issue_to_line(issue: BeadsIssue) -> str:
    text = dumps_compact(issue_to_record(issue), allow_nan=True)
    return escape_unsafe_chars(text)


def escape_unsafe_chars(json_text: str) -> str:
    """JSON text with every line-breaking character and lone surrogate written as a ``\\uXXXX``
    escape (raw, they can only sit inside strings: none of them is JSON whitespace)."""
    if _UNSAFE.search(json_text) is None:
        return json_text
    return _UNSAFE.sub(_escaped, json_text)


def _escaped(match: re.Match[str]) -> str:
    # (a translate table of the 2,056 characters cost 2 ms of every import of the tracker)
    return f"\\u{ord(match.group()):04x}"


def issue_from_line(line: str) -> BeadsIssue | None:
    """One JSONL line to an issue; None for records of another ``_type`` (kept by callers)."""
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as e:
        raise IssueRecordError(f"not JSON: {e}") from None
    if isinstance(rec, dict) and rec.get("_type", RECORD_TYPE) != RECORD_TYPE:
        return None
    return issue_from_record(rec)


def issue_as_json(issue: BeadsIssue) -> dict[str, Any]:
    """For ``--json`` output and MCP tools: the export record without ``_type``."""
    rec = issue_to_record(issue)
    rec.pop("_type", None)
    rec.setdefault("labels", [])
    rec.setdefault("metadata", {})
    return rec


__all__ = [
    "BD_ONLY_STATUSES",
    "DEDUPE_KEY",
    "ISSUE_TYPES",
    "LINE_BREAK_CHARS",
    "STATUSES",
    "BeadsIssue",
    "Comment",
    "Dependency",
    "escape_unsafe_chars",
    "format_time",
    "issue_as_json",
    "issue_from_line",
    "issue_from_record",
    "issue_to_line",
    "issue_to_record",
    "parse_time",
    "time_from_timestamp",
]
