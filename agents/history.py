"""A memory's life as events: saved, touched, edited, merged, promoted, superseded, archived,
undone, with time and cause.

Built from the memory's stored versions (``storage.record_history``: the JSONL keeps each
update as a line until compaction), the record's own fields (they survive compaction), the
graveyard of gc, and the issues the agents opened about it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cortexgraph.agents.merge_ops import PROVENANCE_KEY
from cortexgraph.agents.undo import GC_KEY, UNDO_KEY
from cortexgraph.storage.errors import InvalidInputError, MemoryNotFoundError
from cortexgraph.storage.models import Memory, MemoryStatus

# meta.extra key of a person's edit: {"at": unix seconds, "by": what edited, "fields": [...]}.
# An edit records its own time; the memory's last use says nothing about when it was edited.
EDIT_KEY = "edit"


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    at: float | None  # unix seconds; None when the store does not say
    event: str  # saved | touched | edited | merged into | merged from | promoted | ...
    cause: str
    source: str = "store"  # store | beads | gc

    def to_json(self) -> dict[str, Any]:
        when = (
            None
            if self.at is None
            else datetime.fromtimestamp(self.at).isoformat(timespec="seconds")
        )
        return {
            "at": self.at,
            "time": when,
            "event": self.event,
            "cause": self.cause,
            "source": self.source,
        }


def _first_events(m: Memory) -> list[HistoryEvent]:
    prov = m.meta.extra.get(PROVENANCE_KEY)
    if isinstance(prov, dict):
        ids = ", ".join(s.get("id", "?") for s in prov.get("sources", ()))
        issue = f" (issue {prov['issue_id']})" if prov.get("issue_id") else ""
        return [
            HistoryEvent(
                prov.get("merged_at", m.created_at),
                "merged from",
                f"semantic merge of {ids}{issue}",
            )
        ]
    return [HistoryEvent(m.created_at, "saved", f"source: {m.meta.source or 'unknown'}")]


def _changes(old: Memory | None, new: Memory, merged_at: dict[str, float]) -> list[HistoryEvent]:
    if old is None:
        return _first_events(new)
    out: list[HistoryEvent] = []
    x_old, x_new = old.meta.extra, new.meta.extra
    edit = x_new.get(EDIT_KEY)
    if isinstance(edit, dict) and edit != x_old.get(EDIT_KEY):
        out.append(_edit_event(edit))
    elif new.content != old.content:  # an edit that recorded no time (older versions)
        out.append(HistoryEvent(None, "edited", "content changed"))
    if new.use_count > old.use_count:
        out.append(
            HistoryEvent(
                new.last_used, "touched", f"used ({old.use_count} -> {new.use_count} uses)"
            )
        )
    undo = x_new.get(UNDO_KEY)
    if isinstance(undo, dict) and undo != x_old.get(UNDO_KEY):
        out.append(HistoryEvent(undo.get("at"), str(undo.get("event")), str(undo.get("cause"))))
    elif new.status != old.status or x_new.get("merged_into") != x_old.get("merged_into"):
        out.extend(_status_events(new, merged_at))
    sup = x_new.get("superseded_by")
    if sup and sup != x_old.get("superseded_by"):
        out.append(HistoryEvent(new.last_used, "superseded", f"by {sup}"))
    return out


def _edit_event(edit: dict[str, Any]) -> HistoryEvent:
    at = edit.get("at")
    fields = ", ".join(str(f) for f in edit.get("fields") or ()) or "the record"
    return HistoryEvent(
        float(at) if isinstance(at, (int, float)) else None,
        "edited",
        f"{edit.get('by') or 'edited'}: {fields} changed",
    )


def _status_events(m: Memory, merged_at: dict[str, float]) -> list[HistoryEvent]:
    into = m.meta.extra.get("merged_into")
    gc = m.meta.extra.get(GC_KEY)
    if m.status is MemoryStatus.ARCHIVED and into:
        return [HistoryEvent(merged_at.get(into), "merged into", f"semantic merge into {into}")]
    if m.status is MemoryStatus.ARCHIVED and isinstance(gc, dict):
        return [
            HistoryEvent(
                gc.get("archived_at"),
                "archived",
                f"gc ({gc.get('mode', 'archive')}): below the forget threshold",
            )
        ]
    if m.status is MemoryStatus.ARCHIVED:
        return [HistoryEvent(None, "archived", "status set to archived")]
    if m.status is MemoryStatus.PROMOTED:
        return [HistoryEvent(m.promoted_at, "promoted", f"note {m.promoted_to}")]
    return [HistoryEvent(None, "reactivated", f"status back to {m.status.value}")]


def _from_fields(m: Memory, merged_at: dict[str, float]) -> list[HistoryEvent]:
    """What the latest record alone tells (all there is after compaction)."""
    out = _first_events(m)
    if m.use_count > 0 and m.last_used > m.created_at:
        out.append(HistoryEvent(m.last_used, "touched", f"last use ({m.use_count} uses)"))
    if m.status is not MemoryStatus.ACTIVE:
        out.extend(_status_events(m, merged_at))
    undo = m.meta.extra.get(UNDO_KEY)
    if isinstance(undo, dict):
        out.append(HistoryEvent(undo.get("at"), str(undo.get("event")), str(undo.get("cause"))))
    edit = m.meta.extra.get(EDIT_KEY)
    if isinstance(edit, dict):
        out.append(_edit_event(edit))
    if m.meta.extra.get("superseded_by"):
        out.append(HistoryEvent(None, "superseded", f"by {m.meta.extra['superseded_by']}"))
    return out


def _issue_mentions(issue: Any, memory_id: str) -> bool:
    meta = getattr(issue, "metadata", None) or {}
    ids = meta.get("memory_ids") or ()
    return memory_id in (meta.get("memory_id"), meta.get("merged_id")) or memory_id in ids


def _ts(value: Any) -> float | None:
    if isinstance(value, datetime):
        return value.timestamp()
    return float(value) if isinstance(value, (int, float)) else None


def issue_events(issues: Iterable[Any], memory_id: str) -> list[HistoryEvent]:
    out: list[HistoryEvent] = []
    for issue in issues:
        if not _issue_mentions(issue, memory_id):
            continue
        out.append(
            HistoryEvent(
                _ts(getattr(issue, "created_at", None)),
                "issue opened",
                f"{issue.id}: {issue.title}",
                "beads",
            )
        )
        if issue.status == "closed":
            reason = getattr(issue, "close_reason", "") or "closed"
            out.append(
                HistoryEvent(
                    _ts(getattr(issue, "closed_at", None)),
                    "issue closed",
                    f"{issue.id}: {reason}",
                    "beads",
                )
            )
    return out


def memory_history(
    memory_id: str,
    versions: Sequence[Memory],
    *,
    current: Memory | None = None,
    merged: Iterable[Memory] = (),
    issues: Iterable[Any] = (),
    grave: Any = None,
) -> list[HistoryEvent]:
    """Events of ``memory_id`` in time order. ``versions``: its stored lines, oldest first;
    ``merged``: memories it was merged into (for the merge's time); ``grave``: its graveyard
    entry if gc deleted it."""
    merged_at = {
        m.id: float(m.meta.extra[PROVENANCE_KEY].get("merged_at", m.created_at))
        for m in merged
        if isinstance(m.meta.extra.get(PROVENANCE_KEY), dict)
    }
    events: list[HistoryEvent] = []
    if len(versions) > 1:
        prev: Memory | None = None
        for v in versions:
            events.extend(_changes(prev, v, merged_at))
            prev = v
    elif versions or current is not None:
        events.extend(_from_fields(current or versions[-1], merged_at))
    if grave is not None:
        if not versions and current is None:
            events.extend(_from_fields(grave.memory, merged_at))
        events.append(HistoryEvent(grave.removed_at, "deleted by gc", grave.cause, "gc"))
        if grave.restored_at is not None and current is None:
            events.append(HistoryEvent(grave.restored_at, "restored from gc", "", "gc"))
    # The store's events are in the order they happened; one without a time sorts just after
    # the event before it. The issue log's events all have times.
    keyed, last = [], 0.0
    for i, e in enumerate(events):
        last = e.at if e.at is not None else last
        keyed.append((last, i, e))
    n = len(keyed)
    keyed += [(e.at or 0.0, n + i, e) for i, e in enumerate(issue_events(issues, memory_id))]
    return [e for _, _, e in sorted(keyed, key=lambda t: (t[0], t[1]))]


def history_of(
    store: Any, memory_id: str, *, tracker: Any = None, graveyard: Any = None
) -> list[HistoryEvent]:
    """Everything known about ``memory_id`` from the store, its files, gc and the issues.
    Raises MemoryNotFoundError when none of them has ever heard of it."""
    from cortexgraph.storage.errors import MemoryNotFoundError
    from cortexgraph.storage.record_history import record_versions

    current = store.find(memory_id)
    path = getattr(store, "path", None)
    filename = store.config.memories_filename
    versions = record_versions(path, memory_id, filename) if path is not None else []
    grave = graveyard.find(memory_id) if graveyard is not None else None
    if current is not None:
        latest = current
    elif versions:
        latest = versions[-1]
    elif grave is not None:
        latest = grave.memory
    else:
        raise MemoryNotFoundError(f"no memory {memory_id}, now or in the store's history")
    merged: list[Memory] = []
    for version in [*versions, latest]:
        into = version.meta.extra.get("merged_into")
        if into and all(m.id != into for m in merged):
            # An undone merge deleted the merged memory; its lines still tell when it was made.
            found = store.find(into) or next(
                iter(record_versions(path, into, filename) if path is not None else []), None
            )
            merged += [found] if found is not None else []
    issues = tracker.query() if tracker is not None else ()
    return memory_history(
        memory_id, versions, current=current, merged=merged, issues=issues, grave=grave
    )


def history_of_ref(
    store: Any,
    ref: str,
    resolve: Callable[[str], str],
    *,
    tracker: Any = None,
    graveyard: Any = None,
) -> tuple[str, list[HistoryEvent]]:
    """The id ``ref`` names and its history. ``resolve`` is the shell's rule for ids and their
    prefixes, which knows only what the store and gc hold; a memory an undone merge deleted is
    in neither, yet its stored lines tell its history, so ``ref`` itself is asked before the
    resolver's "not found" stands."""
    try:
        memory_id = resolve(ref)
    except MemoryNotFoundError as unresolved:
        try:
            return ref, history_of(store, ref, tracker=tracker, graveyard=graveyard)
        except (MemoryNotFoundError, InvalidInputError):
            raise unresolved from None
    return memory_id, history_of(store, memory_id, tracker=tracker, graveyard=graveyard)


__all__ = [
    "EDIT_KEY",
    "HistoryEvent",
    "history_of",
    "history_of_ref",
    "issue_events",
    "memory_history",
]
