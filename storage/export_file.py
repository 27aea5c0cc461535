"""The export file: what it holds (``Bundle``), written and read in one of two shapes, chosen
by the file name:

- ``*.jsonl``: a header line ``{"cortexgraph_export": 1, ...}``, then one line per record
  ``{"kind": "memory"|"relation"|"issue", "record": {...}}`` or ``{"kind": "note", "path": ...,
  "text": ...}``;
- ``*.tar.gz``: ``manifest.json``, ``memories.jsonl``, ``relations.jsonl``, ``issues.jsonl``
  and the notes under ``vault/``.

Reading checks sizes before anything is read (``MAX_IMPORT_BYTES``, ``MAX_IMPORT_MEMBERS``).
What is done with a bundle (collected from a store, imported into one): storage.portable.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cortexgraph.storage.errors import InvalidInputError, StorageError

FORMAT = 1
MAX_IMPORT_BYTES = 256 * 1024 * 1024  # the export file, and what its archive unpacks to
MAX_IMPORT_MEMBERS = 200_000


@dataclass
class Bundle:
    """What an export holds: records as their JSON objects, notes as their text."""

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


def read_bundle(path: Path, *, max_bytes: int = MAX_IMPORT_BYTES) -> Bundle:
    """The export at ``path``. Sizes are checked before anything is read: the file, and for an
    archive every member's size from its header and their total, at most ``max_bytes``."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"no export file at {path}")
    size = path.stat().st_size
    if size > max_bytes:
        raise InvalidInputError(
            f"{path} is {size:,} bytes; an import is at most {max_bytes:,} (MAX_IMPORT_BYTES)"
        )
    try:
        if path.name.endswith(".tar.gz"):
            return _read_tar(path, max_bytes)
        if path.suffix == ".jsonl":
            return _read_jsonl(path)
    except RecursionError as exc:
        raise InvalidInputError(f"{path} is not a cortexgraph export: nested too deeply") from exc
    except (OSError, tarfile.TarError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(f"{path} is not a cortexgraph export: {exc}") from exc
    raise InvalidInputError(f"{path}: import a .jsonl or a .tar.gz file made by export")


def _read_jsonl(path: Path) -> Bundle:
    bundle = Bundle()
    with path.open(encoding="utf-8") as fh:
        header = json.loads(fh.readline() or "{}")
        if not isinstance(header, dict) or header.get("cortexgraph_export") != FORMAT:
            raise ValueError("missing the cortexgraph_export header line")
        for n, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            obj = json.loads(line)
            kind = obj.get("kind") if isinstance(obj, dict) else None
            if kind == "note":
                bundle.notes[str(obj["path"])] = str(obj["text"])
            elif kind in ("memory", "relation", "issue"):
                getattr(
                    bundle, {"memory": "memories", "relation": "relations", "issue": "issues"}[kind]
                ).append(obj["record"])
            else:
                raise ValueError(f"line {n}: unknown kind {kind!r}")
    return bundle


def _read_tar(path: Path, max_bytes: int) -> Bundle:
    bundle = Bundle()
    with tarfile.open(path, "r:gz") as tar:
        files: dict[str, tarfile.TarInfo] = {}
        total = 0
        for n, m in enumerate(tar, start=1):  # headers only: nothing is read into memory yet
            if n > MAX_IMPORT_MEMBERS:
                raise ValueError(f"more than {MAX_IMPORT_MEMBERS:,} members")
            if not m.isfile():
                continue
            if m.name in files:
                raise ValueError(f"two members named {m.name!r}")
            total += m.size
            if total > max_bytes:
                raise ValueError(
                    f"its files hold more than {max_bytes:,} bytes (MAX_IMPORT_BYTES); "
                    f"{m.name} alone is {m.size:,}"
                )
            files[m.name] = m
        manifest = json.loads(_text(tar, files["manifest.json"]))
        if not isinstance(manifest, dict) or manifest.get("cortexgraph_export") != FORMAT:
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
    "MAX_IMPORT_BYTES",
    "MAX_IMPORT_MEMBERS",
    "Bundle",
    "read_bundle",
    "write_bundle",
]
