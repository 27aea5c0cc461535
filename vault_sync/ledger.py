"""What cortexgraph last wrote to each note, so a person's later edits are recognised.

Kept at ``<vault>/.cortexgraph/write-ledger.json``: memory id -> vault-relative path and the
checksum of the body as written. Unlike the LTM index it cannot be rebuilt from the notes, so it
is written atomically and a damaged file only makes cortexgraph more careful (it then treats every
existing note as edited by a person).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger(__name__)

STATE_DIR = ".cortexgraph"
LEDGER_FILE = "write-ledger.json"


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    path: str  # vault-relative, forward slashes
    body_checksum: str
    written_at: float
    conflict_checksum: str | None = None  # body of the last conflict copy written


class WriteLedger:
    def __init__(self, vault: Path) -> None:
        self.file = vault / STATE_DIR / LEDGER_FILE
        self.entries: dict[str, LedgerEntry] = {}
        self._load()

    def _load(self) -> None:
        try:
            raw = json.loads(self.file.read_text(encoding="utf-8"))
            self.entries = {k: LedgerEntry(**v) for k, v in raw.get("notes", {}).items()}
        except FileNotFoundError:
            return
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            log.warning("ignoring unreadable write ledger %s: %s", self.file, exc)
            self.entries = {}

    def get(self, memory_id: str) -> LedgerEntry | None:
        return self.entries.get(memory_id)

    def set(self, memory_id: str, entry: LedgerEntry) -> None:
        self.entries[memory_id] = entry

    def memory_id_for_path(self, rel_path: str) -> str | None:
        for memory_id, entry in self.entries.items():
            if entry.path == rel_path:
                return memory_id
        return None

    def save(self) -> None:
        data = {"version": 1, "notes": {k: asdict(v) for k, v in sorted(self.entries.items())}}
        atomic_write_text(self.file, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a hidden temp file in the same folder and os.replace: readers (Obsidian, a
    sync client) see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


__all__ = ["LEDGER_FILE", "STATE_DIR", "LedgerEntry", "WriteLedger", "atomic_write_text"]
