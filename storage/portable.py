"""Export and import: a store's memories and relations, the vault's notes and the issues, as
one portable file (its two shapes, read and written: storage.export_file).

Importing never overwrites: a memory or relation whose id is already stored is reported
(``identical`` if equal, ``conflict`` if not) and skipped, so is a memory whose content is
already stored under another id (``duplicate``), a note whose path exists with other text, an
issue the tracker already has.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cortexgraph.storage.errors import CortexGraphError, InvalidInputError
from cortexgraph.storage.export_file import (
    FORMAT,
    MAX_IMPORT_BYTES,
    Bundle,
    read_bundle,
    write_bundle,
)
from cortexgraph.storage.models import Memory, Relation
from cortexgraph.storage.save_order import oldest_first
from cortexgraph.storage.validation import checked_memory

_SKIP_DIRS = {".cortexgraph", ".obsidian", ".git", ".trash"}


@dataclass
class ImportReport:
    added: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("memories", "relations", "notes", "issues"), 0)
    )
    skipped: list[dict[str, str]] = field(default_factory=list)  # kind, id, why

    def skip(self, kind: str, ident: str, why: str) -> None:
        self.skipped.append({"kind": kind, "id": ident, "why": why})

    def to_json(self) -> dict[str, Any]:
        return {"added": dict(self.added), "skipped": list(self.skipped)}


def vault_notes(vault: Path | None) -> Iterator[tuple[str, str]]:
    if vault is None or not vault.is_dir():
        return
    for path in sorted(vault.rglob("*.md")):
        rel = path.relative_to(vault)
        if any(part in _SKIP_DIRS for part in rel.parts[:-1]) or not path.is_file():
            continue
        yield rel.as_posix(), path.read_text(encoding="utf-8", errors="replace")


def collect_bundle(store: Any, vault: Path | None = None, tracker: Any = None) -> Bundle:
    """Everything to export, read from the open ``store``, the ``vault`` and the ``tracker``."""
    from cortexgraph.storage.beads import issue_as_json

    # Memories and relations read under one hold of the store's lock: a snapshot, where a
    # writer between the two reads left relations pointing at memories not in the file.
    with store.writing():
        # Oldest first, one second's saves in save order (``relations()`` lists relations
        # so): an import saves in file order, so the imported store keeps the exported one's
        # save order.
        memories, relations = oldest_first(store, store.list()), store.relations()
    return Bundle(
        memories=[m.to_json() for m in memories],
        relations=[r.to_json() for r in relations],
        notes=dict(vault_notes(vault)),
        issues=[issue_as_json(i) for i in tracker.query()] if tracker is not None else [],
    )


def import_bundle(
    store: Any, bundle: Bundle, *, vault: Path | None = None, tracker: Any = None
) -> ImportReport:
    """Add what ``bundle`` holds that the store, vault and tracker lack; report the rest."""
    report = ImportReport()
    # Every record is read and checked before anything is written: a bad record is skipped
    # with its reason, never left to stop the import halfway.
    memories = []
    for n, raw in enumerate(bundle.memories, start=1):
        try:
            memories.append(checked_memory(Memory.from_json(raw), store.config)[0])
        except InvalidInputError as exc:
            report.skip("memory", _raw_id(raw, n), f"invalid record: {exc}")
    relations = []
    for n, raw in enumerate(bundle.relations, start=1):
        try:
            relations.append(Relation.from_json(raw))
        except InvalidInputError as exc:
            report.skip("relation", _raw_id(raw, n), f"invalid record: {exc}")
    by_content = {m.content: m.id for m in store.list()}
    for memory in memories:
        existing = store.find(memory.id)
        if existing is not None:
            same = existing.to_json() == memory.to_json()
            report.skip(
                "memory",
                memory.id,
                "identical record already stored"
                if same
                else "conflict: another version of this id is stored (kept as it is)",
            )
            continue
        twin = by_content.get(memory.content)
        if twin is not None:
            report.skip("memory", memory.id, f"duplicate: same content stored as {twin}")
            continue
        store.put(memory)
        by_content[memory.content] = memory.id
        report.added["memories"] += 1
    known_rel = {r.id: r for r in store.relations()}
    for rel in relations:
        if rel.id in known_rel:
            same = known_rel[rel.id].to_json() == rel.to_json()
            report.skip(
                "relation",
                rel.id,
                "identical record already stored"
                if same
                else "conflict: another version of this id is stored (kept as it is)",
            )
            continue
        if store.find(rel.from_memory_id) is None or store.find(rel.to_memory_id) is None:
            report.skip("relation", rel.id, "one of its memories is not in the store")
            continue
        store.put_relation(rel)
        report.added["relations"] += 1
    if vault is not None:
        _import_notes(bundle.notes, vault, report)
    elif bundle.notes:
        report.skip("note", "*", f"{len(bundle.notes)} note(s): no vault to write them to")
    if tracker is not None:
        _import_issues(bundle.issues, tracker, report)
    elif bundle.issues:
        report.skip("issue", "*", f"{len(bundle.issues)} issue(s): no issue tracker")
    return report


_NOTE_PART_BAD = re.compile(r"[\x00-\x1f\x7f\\:]")


def note_path_problem(rel: str) -> str | None:
    """Why ``rel`` may not be imported as a note, or None. A note is a ``.md`` file under
    visible folders: nothing hidden (``.obsidian``, ``.git``, ``.cortexgraph``, ``.trash``:
    the folders the vault sync skips), no ``..``, no absolute path, no control character,
    backslash or colon (a separator or drive on Windows)."""
    if not rel or rel.startswith("/") or _NOTE_PART_BAD.search(rel):
        return "unsafe path"
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "unsafe path"
    if any(p.startswith(".") for p in parts):
        return "unsafe path: hidden files and folders (.obsidian, .git, ...) are not notes"
    if not parts[-1].endswith(".md") or parts[-1] == ".md":
        return "not a note: only .md files are imported"
    return None


def _import_notes(notes: dict[str, str], vault: Path, report: ImportReport) -> None:
    if notes:
        vault.mkdir(parents=True, exist_ok=True)
    root = vault.resolve()
    for rel, text in notes.items():
        problem = note_path_problem(rel)
        if problem is None:
            problem = _write_note(root, rel.split("/"), text)
        if problem == "added":
            report.added["notes"] += 1
        else:
            report.skip("note", rel, problem)


def _write_note(root: Path, parts: list[str], text: str) -> str:
    """Create ``root/parts`` without following any symlink on the way; returns "added" or why
    not. Folders are created one at a time (each checked to be a real folder) and the file
    with O_EXCL | O_NOFOLLOW, so a link planted meanwhile is refused, not followed."""
    folder = root
    for part in parts[:-1]:
        folder = folder / part
        try:
            os.mkdir(folder)
        except FileExistsError:
            pass
        except OSError as exc:
            return f"cannot create its folder: {exc.strerror}"
        if folder.is_symlink() or not folder.is_dir():
            return "unsafe path: goes through a symlink or a file"
    target = folder / parts[-1]
    if target.is_symlink():
        return "unsafe path: the note is a symlink"
    if target.exists():
        try:
            same = target.read_text(encoding="utf-8", errors="replace") == text
        except OSError:
            same = False
        return (
            "identical note exists"
            if same
            else "conflict: a different note exists at this path (kept as it is)"
        )
    if root not in target.parent.resolve().parents and target.parent.resolve() != root:
        return "unsafe path: resolves outside the vault"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(target, flags, 0o644)
    except OSError as exc:
        return f"cannot write: {exc.strerror}"
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return "added"


def _raw_id(raw: Any, n: int) -> str:
    ident = raw.get("id") if isinstance(raw, dict) else None
    return ident[:80] if isinstance(ident, str) else f"record {n}"


def _import_issues(issues: Iterable[dict[str, Any]], tracker: Any, report: ImportReport) -> None:
    issues = list(issues)
    known = (
        {
            str(i.metadata.get("imported_from")): i.id
            for i in tracker.query()
            if i.metadata.get("imported_from")
        }
        if issues
        else {}
    )
    for n, raw in enumerate(issues, start=1):
        try:
            _import_issue(raw, tracker, known, report)
        except (AttributeError, TypeError, ValueError, OverflowError, CortexGraphError) as exc:
            report.skip("issue", _raw_id(raw, n), f"invalid issue: {str(exc)[:200]}")


def _import_issue(
    raw: dict[str, Any], tracker: Any, known: dict[str, str], report: ImportReport
) -> None:
    old_id = str(raw.get("id"))
    if tracker.find(old_id) is not None:
        report.skip("issue", old_id, "an issue with this id exists")
        return
    if old_id in known:
        report.skip("issue", old_id, f"imported before, as {known[old_id]}")
        return
    meta = dict(raw.get("metadata") or {})
    meta["imported_from"] = old_id
    labels = raw.get("labels") or []
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise ValueError("labels must be a list of strings")
    priority = raw.get("priority", 2)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise ValueError(f"priority must be a whole number, got {str(priority)[:40]!r}")
    issue = tracker.create(
        str(raw.get("title") or old_id),
        description=str(raw.get("description") or ""),
        labels=labels,
        priority=priority,
        metadata=meta,
        dedupe_key=f"import:{old_id}",
    )
    if raw.get("status") == "closed" and issue.status != "closed":
        tracker.close(issue.id, str(raw.get("close_reason") or "closed before export"))
    report.added["issues"] += 1


__all__ = [
    "FORMAT",
    "MAX_IMPORT_BYTES",
    "Bundle",
    "ImportReport",
    "collect_bundle",
    "import_bundle",
    "read_bundle",
    "write_bundle",
]
