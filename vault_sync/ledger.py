"""What cortexgraph last wrote to each note, so a person's later edits are recognised.

Kept at ``<vault>/.cortexgraph/``: ``write-ledger.json`` (a snapshot: memory id -> vault-relative
path and the checksum of the body as written) plus ``write-ledger.journal`` (one JSON line per
entry set since the snapshot). A write appends one short line instead of rewriting the whole
ledger (that made promotion O(ledger) per note); ``flush()`` folds the journal into a new
snapshot, atomically. Unlike the LTM index the ledger cannot be rebuilt from the notes, so:

- a crash loses nothing that reached the OS; a torn last journal line is ignored;
- other processes see our entries at their next ``refresh()`` (one ``stat`` when nothing changed);
- a lost or damaged ledger only makes cortexgraph more careful: a note without an entry counts as
  edited by a person unless its body is exactly what cortexgraph would write now.

Writers hold the sink's cross-process lock around ``refresh``/``set``/``flush``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from cortexgraph.vault_sync.atomic_file import append_line, atomic_write_text, empty_file

log = logging.getLogger(__name__)

STATE_DIR = ".cortexgraph"
LEDGER_FILE = "write-ledger.json"
JOURNAL_FILE = "write-ledger.journal"


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    path: str  # vault-relative, forward slashes
    body_checksum: str
    written_at: float
    conflict_checksum: str | None = None  # body of the last conflict copy written


def _fields(entry: LedgerEntry) -> dict[str, object]:
    """``asdict(entry)``, in its field order, without asdict's deep copy (a ledger holds many)."""
    return {
        "path": entry.path,
        "body_checksum": entry.body_checksum,
        "written_at": entry.written_at,
        "conflict_checksum": entry.conflict_checksum,
    }


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class WriteLedger:
    def __init__(self, vault: Path) -> None:
        self.file = vault / STATE_DIR / LEDGER_FILE
        self.journal = vault / STATE_DIR / JOURNAL_FILE
        self.entries: dict[str, LedgerEntry] = {}
        self._snapshot_sig: tuple[int, int, int] | None = None
        self._journal_offset = 0  # bytes of the journal already applied
        self._journal_lines = 0
        self._load()

    # -- reading --------------------------------------------------------------------------------
    def _load(self) -> None:
        self.entries = {}
        self._snapshot_sig = _signature(self.file)
        self._journal_offset = self._journal_lines = 0
        try:
            raw = json.loads(self.file.read_text(encoding="utf-8"))
            self.entries = {k: LedgerEntry(**v) for k, v in raw.get("notes", {}).items()}
        except FileNotFoundError:
            pass
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            log.warning("ignoring unreadable write ledger %s: %s", self.file, exc)
            self.entries = {}
        self._read_journal()

    def _read_journal(self) -> None:
        try:
            with open(self.journal, "rb") as fh:
                fh.seek(self._journal_offset)
                data = fh.read()
        except OSError:
            return
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        for line in data[:end].splitlines():
            try:
                record = json.loads(line)
                memory_id = record.pop("id")
                self.entries[memory_id] = LedgerEntry(**record)
            except (ValueError, TypeError, KeyError, AttributeError):
                log.warning("ignoring a damaged line of %s", self.journal)
            self._journal_lines += 1
        self._journal_offset += end

    def refresh(self) -> None:
        """Pick up what other processes wrote since we last looked (cheap when nothing did)."""
        if _signature(self.file) != self._snapshot_sig:
            self._load()  # another process compacted: its snapshot holds everything
            return
        try:
            size = self.journal.stat().st_size
        except OSError:
            size = 0
        if size < self._journal_offset:
            self._load()
        elif size > self._journal_offset:
            self._read_journal()

    def get(self, memory_id: str) -> LedgerEntry | None:
        return self.entries.get(memory_id)

    @property
    def pending(self) -> int:
        """Journal lines not yet folded into the snapshot."""
        return self._journal_lines

    # -- writing --------------------------------------------------------------------------------
    def set(self, memory_id: str, entry: LedgerEntry) -> None:
        """Record ``entry`` (caller holds the vault's write lock)."""
        line = json.dumps({"id": memory_id, **_fields(entry)}, ensure_ascii=False) + "\n"
        # Whole or not at all: on a full disk a cut line joined the next one, which was lost.
        self._journal_offset = append_line(self.journal, line).st_size
        self.entries[memory_id] = entry
        self._journal_lines += 1

    def save(self) -> None:
        """Fold the journal into a new snapshot (atomic), then empty the journal. A crash between
        the two only replays entries the snapshot already has."""
        data = {"version": 1, "notes": {k: _fields(v) for k, v in sorted(self.entries.items())}}
        atomic_write_text(self.file, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        empty_file(self.journal)
        self._snapshot_sig = _signature(self.file)
        self._journal_offset = self._journal_lines = 0

    flush = save


__all__ = [
    "JOURNAL_FILE",
    "LEDGER_FILE",
    "STATE_DIR",
    "LedgerEntry",
    "WriteLedger",
]
