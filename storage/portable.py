"""Export and import: a store's memories and relations, the vault's notes and the issues, as
one portable file.

Two shapes, chosen by the file name:
- ``*.jsonl``: a header line ``{"cortexgraph_export": 1, ...}``, then one line per record
  ``{"kind": "memory"|"relation"|"issue", "record": {...}}`` or ``{"kind": "note", "path": ...,
  "text": ...}``;
- ``*.tar.gz``: ``manifest.json``, ``memories.jsonl``, ``relations.jsonl``, ``issues.jsonl``
  and the notes under ``vault/``.

Importing never overwrites: a memory or relation whose id is already stored is reported
(``identical`` if equal, ``conflict`` if not) and skipped, so is a memory whose content is
already stored under another id (``duplicate``), a note whose path exists with other text, an
issue the tracker already has.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from cortexgraph.storage.errors import InvalidInputError, StorageError
from cortexgraph.storage.models import Memory, Relation

FORMAT = 1
_SKIP_DIRS = {".cortexgraph", ".obsidian", ".git", ".trash"}


@dataclass
class Bundle:
    memories: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)  # vault-relative posix path -> text
    issues: list[dict[str, Any]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "memories": len(self.memories),
            "relations": len(self.relations),
            "notes": len(self.notes),
            "issues": len(self.issues),
        }


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

    return Bundle(
        memories=[m.to_json() for m in sorted(store.list(), key=lambda m: (m.created_at, m.id))],
        relations=[
            r.to_json() for r in sorted(store.relations(), key=lambda r: (r.created_at, r.id))
        ],
        notes=dict(vault_notes(vault)),
        issues=[issue_as_json(i) for i in tracker.query()] if tracker is not None else [],
    )


def write_bundle(bundle: Bundle, path: Path) -> None:
    path = Path(path)
    header = {"cortexgraph_export": FORMAT, "created": int(time.time()), **bundle.counts()}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if path.name.endswith(".tar.gz"):
            with tarfile.open(tmp, "w:gz") as tar:
                _add(tar, "manifest.json", json.dumps(header, indent=2))
                for name, rows in (
                    ("memories.jsonl", bundle.memories),
                    ("relations.jsonl", bundle.relations),
                    ("issues.jsonl", bundle.issues),
                ):
                    _add(tar, name, "".join(_line(r) for r in rows))
                for rel, text in bundle.notes.items():
                    _add(tar, f"vault/{rel}", text)
        elif path.suffix == ".jsonl":
            with tmp.open("w", encoding="utf-8") as fh:
                fh.write(_line(header))
                for kind, rows in (
                    ("memory", bundle.memories),
                    ("relation", bundle.relations),
                    ("issue", bundle.issues),
                ):
                    fh.writelines(_line({"kind": kind, "record": r}) for r in rows)
                fh.writelines(
                    _line({"kind": "note", "path": p, "text": t}) for p, t in bundle.notes.items()
                )
        else:
            raise InvalidInputError(f"{path}: export to a .jsonl or a .tar.gz file")
        os.replace(tmp, path)
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)


def read_bundle(path: Path) -> Bundle:
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"no export file at {path}")
    try:
        if path.name.endswith(".tar.gz"):
            return _read_tar(path)
        if path.suffix == ".jsonl":
            return _read_jsonl(path)
    except (OSError, tarfile.TarError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(f"{path} is not a cortexgraph export: {exc}") from exc
    raise InvalidInputError(f"{path}: import a .jsonl or a .tar.gz file made by export")


def _read_jsonl(path: Path) -> Bundle:
    bundle = Bundle()
    with path.open(encoding="utf-8") as fh:
        header = json.loads(fh.readline() or "{}")
        if header.get("cortexgraph_export") != FORMAT:
            raise ValueError("missing the cortexgraph_export header line")
        for n, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            obj = json.loads(line)
            kind = obj.get("kind")
            if kind == "note":
                bundle.notes[str(obj["path"])] = str(obj["text"])
            elif kind in ("memory", "relation", "issue"):
                getattr(
                    bundle, {"memory": "memories", "relation": "relations", "issue": "issues"}[kind]
                ).append(obj["record"])
            else:
                raise ValueError(f"line {n}: unknown kind {kind!r}")
    return bundle


def _read_tar(path: Path) -> Bundle:
    bundle = Bundle()
    with tarfile.open(path, "r:gz") as tar:
        files = {m.name: m for m in tar.getmembers() if m.isfile()}
        manifest = json.loads(_text(tar, files["manifest.json"]))
        if manifest.get("cortexgraph_export") != FORMAT:
            raise ValueError("manifest.json is not a cortexgraph export manifest")
        for name, rows in (
            ("memories.jsonl", bundle.memories),
            ("relations.jsonl", bundle.relations),
            ("issues.jsonl", bundle.issues),
        ):
            if name in files:
                rows.extend(json.loads(x) for x in _text(tar, files[name]).splitlines() if x)
        for name, member in files.items():
            if name.startswith("vault/") and name.endswith(".md"):
                bundle.notes[name.removeprefix("vault/")] = _text(tar, member)
    return bundle


def import_bundle(
    store: Any, bundle: Bundle, *, vault: Path | None = None, tracker: Any = None
) -> ImportReport:
    """Add what ``bundle`` holds that the store, vault and tracker lack; report the rest."""
    report = ImportReport()
    by_content = {m.content: m.id for m in store.list()}
    for raw in bundle.memories:
        memory = Memory.from_json(raw)
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
    for raw in bundle.relations:
        rel = Relation.from_json(raw)
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


def _import_notes(notes: dict[str, str], vault: Path, report: ImportReport) -> None:
    root = vault.resolve()
    for rel, text in notes.items():
        parts = PurePosixPath(rel).parts
        if not parts or rel.startswith("/") or ".." in parts:
            report.skip("note", rel, "unsafe path")
            continue
        target = root.joinpath(*parts)
        if target.exists():
            same = target.read_text(encoding="utf-8", errors="replace") == text
            report.skip(
                "note",
                rel,
                "identical note exists"
                if same
                else "conflict: a different note exists at this path (kept as it is)",
            )
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        report.added["notes"] += 1


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
    for raw in issues:
        old_id = str(raw.get("id"))
        if tracker.find(old_id) is not None:
            report.skip("issue", old_id, "an issue with this id exists")
            continue
        if old_id in known:
            report.skip("issue", old_id, f"imported before, as {known[old_id]}")
            continue
        meta = dict(raw.get("metadata") or {})
        meta["imported_from"] = old_id
        issue = tracker.create(
            str(raw.get("title") or old_id),
            description=str(raw.get("description") or ""),
            labels=list(raw.get("labels") or ()),
            priority=int(raw.get("priority", 2)),
            metadata=meta,
            dedupe_key=f"import:{old_id}",
        )
        if raw.get("status") == "closed" and issue.status != "closed":
            tracker.close(issue.id, str(raw.get("close_reason") or "closed before export"))
        report.added["issues"] += 1


def _line(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=False) + "\n"


def _add(tar: tarfile.TarFile, name: str, text: str) -> None:
    data = text.encode("utf-8")
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
    tar.addfile(info, io.BytesIO(data))


def _text(tar: tarfile.TarFile, member: tarfile.TarInfo) -> str:
    fh = tar.extractfile(member)
    if fh is None:
        raise ValueError(f"{member.name} is not a file")
    return fh.read().decode("utf-8")


__all__ = [
    "FORMAT",
    "Bundle",
    "ImportReport",
    "collect_bundle",
    "import_bundle",
    "read_bundle",
    "write_bundle",
]
