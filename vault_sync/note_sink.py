"""ObsidianNoteSink: writes promoted memories as notes, idempotently and without clobbering edits.

It satisfies ``agents.protocols.NoteSink`` structurally (vault_sync may not import agents).
One sink serves a whole run: it walks the vault once (``NoteLocator``) and appends one journal
line per note to the write ledger; ``close()`` (or leaving ``with sink:``) folds the journal into
the ledger snapshot, which also happens every ``FLUSH_EVERY`` notes. Nothing is lost without
``close()``: the journal is read back by the next sink.

``batch=True`` is for a job that closes its sink (the pipeline): entity notes are written at
each flush, each once with all the links collected since (vault_sync.entity_notes), and notes
are not fsynced one by one: each flush syncs the file system once (``syncfs``). A process
killed between flushes loses nothing written (the page cache keeps it) but leaves those entity
lists short until the notes are promoted again; a power cut can lose the notes written since
the last flush (at most ``FLUSH_EVERY``). A batch sink also keeps the vault's write lock from
its first note to the next flush (another process waits at most one flush's worth of notes),
instead of taking it per note. The default, for interactive promotions, writes a note's entity
notes with it, fsyncs every file and locks per note.

A new note's name is checked against the folder's names listed once per sink (kept up to date
as we write, and each pick confirmed by one ``exists``), not a listing per note.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from cortexgraph.storage.models import Memory, Relation
from cortexgraph.vault_sync.entity_notes import EntityNoteBatch
from cortexgraph.vault_sync.errors import VaultNotFoundError, VaultWriteError
from cortexgraph.vault_sync.ledger import (
    STATE_DIR,
    LedgerEntry,
    WriteLedger,
    atomic_write_text,
    sync_filesystem,
)
from cortexgraph.vault_sync.note_format import (
    NOTE_FORMAT_VERSION,
    LinkTarget,
    body_checksum,
    merge_metadata,
    note_text,
    parse_note_text,
    related_block,
    render_note,
    replace_related_block,
)
from cortexgraph.vault_sync.note_locator import NoteLocator, iter_markdown_files, note_id
from cortexgraph.vault_sync.paths import (
    ensure_inside,
    relative_posix,
    safe_filename,
    safe_folder,
    unique_note_path,
)
from cortexgraph.vault_sync.retitle import Renamed, retitle_note

log = logging.getLogger(__name__)

CONFLICT_MARK = "cortexgraph conflict"
FLUSH_EVERY = 500  # journal lines before the ledger snapshot is rewritten


@dataclass(frozen=True, slots=True)
class WrittenNote:
    """Same fields as agents.protocols.NoteRef, plus what else happened."""

    memory_id: str
    path: str  # relative to the vault root, forward slashes
    created: bool  # False when an existing note was updated
    body_kept: bool = False  # a person had edited the body; only frontmatter was updated
    conflict_path: str | None = None  # where our newer version went instead


class ObsidianNoteSink:
    """Writes memory notes under ``vault/folder`` (and entity notes under ``folder/entities``)."""

    def __init__(
        self,
        vault_path: str | os.PathLike[str],
        folder: str = "cortexgraph",
        *,
        entity_notes: bool = True,
        create: bool = True,
        version: str = NOTE_FORMAT_VERSION,
        batch: bool = False,
    ) -> None:
        self.vault = Path(vault_path).expanduser()
        if not self.vault.is_dir():
            if not create:
                raise VaultNotFoundError(f"vault directory {self.vault} does not exist")
            self.vault.mkdir(parents=True, exist_ok=True)
        self.vault = self.vault.resolve()
        self.folder = safe_folder(folder)
        self.entity_notes = entity_notes
        self.version = version
        self._lock = FileLock(str(self.vault / STATE_DIR / "write.lock"))
        self._ledger: WriteLedger | None = None
        self.locator = NoteLocator(self.vault)
        self.renamed: list[Renamed] = []  # notes renamed to their short titles, this sink
        self._entities = EntityNoteBatch(self.vault, self.folder, version)
        self.batch = batch
        self._held = False  # a batch sink holds the write lock between flushes
        self._taken: dict[Path, set[str]] = {}  # folder -> lower-cased names, listed once

    # -- NoteSink -------------------------------------------------------------------------------
    def write_note(
        self,
        memory: Memory,
        *,
        related: Sequence[Memory] = (),
        relations: Sequence[Relation] = (),
        reason: str = "",
        now: float,
    ) -> WrittenNote:
        try:
            if self.batch and not self._held:
                self._lock.acquire()
                self._held = True
            with nullcontext() if self._held else self._lock:
                ledger = self._fresh_ledger()
                result = self._write_locked(memory, related, relations, reason, now, ledger)
                if ledger.pending >= FLUSH_EVERY or self._entities.notes >= FLUSH_EVERY:
                    self._flush_locked(ledger)
                return result
        except OSError as exc:
            raise VaultWriteError(f"cannot write the note for {memory.id}: {exc}") from exc

    def flush(self) -> None:
        """Write the collected entity links and fold the ledger journal into its snapshot
        (atomic); cheap when nothing is pending."""
        if (self._ledger is None or not self._ledger.pending) and not self._entities.notes:
            self._release_held()
            return
        try:
            with self._lock:
                self._flush_locked(self._fresh_ledger())
        except OSError as exc:
            raise VaultWriteError(f"cannot write the write ledger: {exc}") from exc

    close = flush

    def _flush_locked(self, ledger: WriteLedger) -> None:
        try:
            self._entities.write(durable=not self.batch)
            if self.batch:
                sync_filesystem(self.vault)  # the notes written since the last flush, at once
            ledger.save()
        finally:
            self._release_held()

    def _release_held(self) -> None:
        if self._held:
            self._held = False
            self._lock.release()

    def __enter__(self) -> ObsidianNoteSink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def find_note(self, memory_id: str, hint: str | None = None) -> Path | None:
        """The note whose frontmatter ``id`` is ``memory_id``, wherever a person moved it."""
        ledger = self._ledger or WriteLedger(self.vault)
        ledger.refresh()
        self._ledger = ledger
        return self._find_existing(memory_id, ledger, hint)

    # -- internals ------------------------------------------------------------------------------
    def _fresh_ledger(self) -> WriteLedger:
        """The ledger with other processes' entries applied; call under the lock."""
        if self._ledger is None:
            (self.vault / STATE_DIR).mkdir(parents=True, exist_ok=True)
            self._ledger = WriteLedger(self.vault)
        else:
            self._ledger.refresh()
        return self._ledger

    def _write_locked(
        self,
        memory: Memory,
        related: Sequence[Memory],
        relations: Sequence[Relation],
        reason: str,
        now: float,
        ledger: WriteLedger,
    ) -> WrittenNote:
        existing = self._find_existing(memory.id, ledger, memory.promoted_to)
        if existing is not None:
            existing = self._retitled(existing, memory, ledger, now)
        links = self._links(memory, related, relations, ledger)
        rendered = render_note(memory, links=links, reason=reason, now=now, version=self.version)
        new_sum = body_checksum(rendered.body)
        if existing is None:
            directory = ensure_inside(self.vault, self.folder)
            directory.mkdir(parents=True, exist_ok=True)
            path = self._new_note_path(directory, safe_filename(rendered.title))
            ensure_inside(self.vault, path.relative_to(self.vault))
            atomic_write_text(path, rendered.text(), durable=not self.batch)
            self.locator.record(memory.id, path)
            rel = relative_posix(self.vault, path)
            ledger.set(memory.id, LedgerEntry(rel, new_sum, now))
            self._update_entity_notes(memory, path.stem)
            return WrittenNote(memory.id, rel, created=True)

        rel = relative_posix(self.vault, existing)
        parsed = parse_note_text(existing.read_text(encoding="utf-8"))
        entry = ledger.get(memory.id)
        current_sum = body_checksum(parsed.body)
        # No ledger entry (lost, or a note from another tool) counts as edited: be careful.
        edited = entry is None or current_sum != entry.body_checksum
        if current_sum == new_sum:
            edited = False
        if parsed.frontmatter_error is not None:
            # The person broke the YAML; rewriting it would drop whatever they meant to keep.
            conflict: str | None = self._write_conflict(
                existing, rendered.metadata, rendered.body, now
            )
            ledger.set(memory.id, _with_conflict(entry, rel, now, new_sum))
            return WrittenNote(memory.id, rel, False, body_kept=True, conflict_path=conflict)
        metadata = merge_metadata(parsed.metadata, rendered.metadata)
        for keep in ("created", "promoted_at"):  # first promotion's dates stay
            if parsed.metadata.get(keep):
                metadata[keep] = parsed.metadata[keep]
        if not edited:
            atomic_write_text(existing, note_text(metadata, rendered.body), durable=not self.batch)
            self.locator.record(memory.id, existing)
            ledger.set(memory.id, LedgerEntry(rel, new_sum, now))
            self._update_entity_notes(memory, existing.stem)
            return WrittenNote(memory.id, rel, created=False)
        # The person's body stays; only our managed Related list inside it follows the store.
        body = replace_related_block(parsed.body, related_block(links)) or parsed.body
        atomic_write_text(existing, note_text(metadata, body))
        self.locator.record(memory.id, existing)
        conflict = None
        ours_changed = entry is None or new_sum != entry.body_checksum
        if ours_changed and (entry is None or entry.conflict_checksum != new_sum):
            conflict = self._write_conflict(existing, rendered.metadata, rendered.body, now)
            entry = _with_conflict(entry, rel, now, new_sum)
        elif entry is not None:
            entry = LedgerEntry(rel, entry.body_checksum, now, entry.conflict_checksum)
        if entry is not None:
            ledger.set(memory.id, entry)
        self._update_entity_notes(memory, existing.stem)
        return WrittenNote(memory.id, rel, False, body_kept=True, conflict_path=conflict)

    def _new_note_path(self, directory: Path, stem: str) -> Path:
        """A free name in ``directory`` (see the module doc); recorded as taken."""
        taken = self._taken.get(directory)
        if taken is None:
            try:
                taken = {entry.lower() for entry in os.listdir(directory)}
            except FileNotFoundError:
                taken = set()
            self._taken[directory] = taken
        while True:
            path = unique_note_path(directory, stem, taken=taken)
            taken.add(path.name.lower())
            if not path.exists():  # another process may have written it since our listing
                return path

    def _write_conflict(
        self, original: Path, metadata: Mapping[str, Any], body: str, now: float
    ) -> str:
        """Our version beside the person's note. It carries ``conflict_of`` instead of ``id`` so
        finding a memory's note by id never picks the copy."""
        day = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%d %H%M%S")
        stem = safe_filename(f"{original.stem} ({CONFLICT_MARK} {day})")
        path = unique_note_path(original.parent, stem)
        meta = {("conflict_of" if k == "id" else k): v for k, v in metadata.items()}
        atomic_write_text(path, note_text(meta, body))
        return relative_posix(self.vault, path)

    def _find_existing(self, memory_id: str, ledger: WriteLedger, hint: str | None) -> Path | None:
        candidates: list[str] = []
        entry = ledger.get(memory_id)
        if entry is not None:
            candidates.append(entry.path)
        if hint:
            candidates.append(hint)
        for rel in candidates:
            try:
                path = ensure_inside(self.vault, Path(rel))
            except ValueError:
                continue
            if path.is_file() and note_id(path) == memory_id:
                return path
        # Moved or renamed by a person: the locator knows every note's id (one walk per sink).
        # A ledger entry or hint means a note existed, so a miss then re-walks the vault even
        # if the locator's map is recent (another process may have written it after our walk).
        return self.locator.find(memory_id, expected=bool(candidates))

    def _links(
        self,
        memory: Memory,
        related: Sequence[Memory],
        relations: Sequence[Relation],
        ledger: WriteLedger,
    ) -> list[LinkTarget]:
        types: dict[str, str] = {}
        for rel in relations:
            other = rel.to_memory_id if rel.from_memory_id == memory.id else rel.from_memory_id
            if other != memory.id:
                types.setdefault(other, rel.relation_type)
        hints = {m.id: m.promoted_to for m in related}
        links: list[LinkTarget] = []
        for other in dict.fromkeys([*hints, *types]):
            entry = ledger.get(other)
            path = self._existing_path(entry.path if entry else None) or self._existing_path(
                hints.get(other)
            )
            if path is None and types.get(other) == "consolidated_from":
                source = next((m for m in related if m.id == other), None)
                label = f"{source_label(source)} ({other[:8]})" if source else other[:8]
                links.append(LinkTarget("", label=label, kind="merged"))
                continue
            if path is None:  # not in long-term memory: a link would dangle
                continue
            links.append(LinkTarget(path.stem, kind="memory", relation_type=types.get(other)))
        if self.entity_notes:
            for entity in memory.entities:
                stem = safe_filename(entity)
                links.append(LinkTarget(stem, label=entity, kind="entity"))
        return links

    def _retitled(self, path: Path, memory: Memory, ledger: WriteLedger, now: float) -> Path:
        """``path``, or where it went if it had the legacy name we gave it (renamed, links
        updated: vault_sync.retitle)."""
        renamed = retitle_note(self.vault, path, memory, ledger, now)
        if renamed is None:
            return path
        self.renamed.append(renamed)
        new = self.vault / renamed.new_path
        self.locator.record(memory.id, new)
        return new

    def refresh_note(
        self,
        memory: Memory,
        *,
        related: Sequence[Memory] = (),
        relations: Sequence[Relation] = (),
        now: float,
    ) -> str | None:
        """A later run's care for an existing note: the short title (renamed if it still has
        the legacy name) and the managed Related list, nothing else. Returns what changed
        ("renamed", "related", both joined by "+"), or None."""
        try:
            with self._lock:
                ledger = self._fresh_ledger()
                path = self._find_existing(memory.id, ledger, memory.promoted_to)
                if path is None:
                    return None
                before = len(self.renamed)
                path = self._retitled(path, memory, ledger, now)
                changed = ["renamed"] if len(self.renamed) > before else []
                text = path.read_text(encoding="utf-8")
                parsed = parse_note_text(text)
                links = self._links(memory, related, relations, ledger)
                if parsed.frontmatter_error is not None:
                    return "+".join(changed) or None
                body = replace_related_block(parsed.body, related_block(links))
                entry = ledger.get(memory.id)
                untouched = entry is not None and body_checksum(parsed.body) == entry.body_checksum
                if body is None and links and untouched:  # no list yet: write the note anew
                    reason = str(parsed.metadata.get("promotion_reason") or "")
                    self._write_locked(memory, related, relations, reason, now, ledger)
                    return "+".join([*changed, "related"])
                if body is None:  # a person's note without our markers: theirs alone
                    return "+".join(changed) or None
                if body != parsed.body:
                    atomic_write_text(path, note_text(parsed.metadata, body))
                    changed.append("related")
                return "+".join(changed) or None
        except OSError as exc:
            raise VaultWriteError(f"cannot update the note of {memory.id}: {exc}") from exc

    def _existing_path(self, rel: str | None) -> Path | None:
        if not rel:
            return None
        try:
            path = ensure_inside(self.vault, Path(rel))
        except ValueError:
            return None
        return path if path.is_file() else None

    def _update_entity_notes(self, memory: Memory, note_stem: str) -> None:
        if self.entity_notes:
            self._entities.add(memory.entities, note_stem)
            if not self.batch:
                self._entities.write()  # fsynced, with the note


def source_label(memory: Memory, words: int = 12) -> str:
    """A merged source in the Related list: its first words."""
    text = " ".join(memory.content.split())
    cut = " ".join(text.split()[:words])
    return cut if cut == text else cut + "…"


def _with_conflict(entry: LedgerEntry | None, rel: str, now: float, new_sum: str) -> LedgerEntry:
    base = entry.body_checksum if entry is not None else ""
    return LedgerEntry(rel, base, now, conflict_checksum=new_sum)


__all__ = ["CONFLICT_MARK", "ObsidianNoteSink", "WrittenNote", "iter_markdown_files"]
