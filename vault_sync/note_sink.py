"""ObsidianNoteSink: writes promoted memories as notes, idempotently and without clobbering edits.

It satisfies ``agents.protocols.NoteSink`` structurally (vault_sync may not import agents).
One sink serves a whole run: it walks the vault once (``NoteLocator``) and appends one journal
line per note to the write ledger; ``close()`` (or leaving ``with sink:``) of an interactive
sink folds the journal into the ledger snapshot, which also happens every ``FLUSH_EVERY`` notes
once the journal holds a quarter of the snapshot's entries (so a run's snapshot rewrites add up to O(ledger), not
O(ledger) per ``FLUSH_EVERY`` notes). Nothing is lost without ``close()``: the journal is read
back by the next sink.

``batch=True`` is for a job that flushes or closes its sink once per run (the pipeline: the
promoter flushes before it marks the memories promoted): entity notes are written at that
flush, each once with all the links collected in the run (vault_sync.entity_notes), and notes
are not fsynced one by one: each flush, and every ``FLUSH_EVERY`` notes, syncs the file
system once (``syncfs``), the ledger's journal lines with the notes; the journal is folded into
the snapshot only once it holds a quarter of the snapshot's entries (and ``FLUSH_EVERY``
lines), not at every flush: a run that promotes 20 notes appends 20 lines and rewrites no
15k-entry ledger. A crash after the sync leaves notes and journal on disk: the next sink reads
the journal back, and a memory not yet marked is promoted again onto its note. A process
killed before the flush loses
nothing written (the page cache keeps it) and its memories are not marked yet, so the next run
promotes them again, updating their notes in place and writing the entity lists; a power cut
can lose the notes written since the last sync (at most ``FLUSH_EVERY``). A batch sink also
keeps the vault's write lock from its first note to the next ledger flush (another process
waits at most ``FLUSH_EVERY`` notes), instead of taking it per note. The default, for
interactive promotions, writes a note's entity notes with it, fsyncs every file and locks per
note.

Writing a note goes one way: find the note it already has (ledger, locator), name it
(``note_names``), render it (``note_format``), write it (``atomic_file``), record it (ledger).
A new note's name is checked against the folder's names listed once per sink
(``note_names.FreeNames``), not a listing per note.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path

from filelock import FileLock

from cortexgraph.storage.models import Memory, Relation
from cortexgraph.vault_sync.atomic_file import atomic_write_text, sync_filesystem
from cortexgraph.vault_sync.entity_notes import EntityNoteBatch, prune_entity_notes
from cortexgraph.vault_sync.errors import VaultNotFoundError, VaultWriteError
from cortexgraph.vault_sync.ledger import STATE_DIR, LedgerEntry, WriteLedger
from cortexgraph.vault_sync.note_format import (
    NOTE_FORMAT_VERSION,
    LinkTarget,
    ParsedNote,
    body_checksum,
    render_note,
)
from cortexgraph.vault_sync.note_links import note_links
from cortexgraph.vault_sync.note_locator import NoteLocator, read_note
from cortexgraph.vault_sync.note_names import EntityStems, FreeNames, note_name, safe_folder
from cortexgraph.vault_sync.note_refresh import refresh_note_body
from cortexgraph.vault_sync.note_update import WrittenNote, update_existing_note
from cortexgraph.vault_sync.paths import ensure_inside
from cortexgraph.vault_sync.retitle import Renamed, retitle_note

log = logging.getLogger(__name__)

FLUSH_EVERY = 500  # notes between flushes (file-system sync, lock release, maybe the snapshot)


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
                raise VaultNotFoundError(
                    f"no vault at {self.vault}; nothing was created: check the path, or "
                    "create the folder first to start a new vault"
                )
            self.vault.mkdir(parents=True, exist_ok=True)
            log.info("created the vault %s (it did not exist)", self.vault)
        self.vault = self.vault.resolve()
        self.folder = safe_folder(folder)
        self.entity_notes = entity_notes
        self.version = version
        self._lock = FileLock(str(self.vault / STATE_DIR / "write.lock"))
        self._ledger: WriteLedger | None = None
        # A batch sink saves the locator's map at its flush only (flush() is its last word).
        self.locator = NoteLocator(self.vault, save_walks=not batch)
        self.renamed: list[Renamed] = []  # notes renamed to their short titles, this sink
        self._free_names = FreeNames()  # each folder listed once, kept up to date
        # links and entity notes agree; an entity note is never named as a memory's note
        self._entity_stems = EntityStems(
            self.vault,
            self.folder,
            lambda stem: self._free_names.holds(self._notes_directory(), stem),
        )
        self._entities = EntityNoteBatch(self.vault, self.folder, version, self._entity_stems)
        self.batch = batch
        self._held = False  # a batch sink holds the write lock between flushes
        self._notes_dir: Path | None = None  # resolved, while a batch sink holds the lock
        self._unflushed = 0  # notes written since the last flush
        # memory id -> the Related links its note got from this sink: refresh_note skips a note
        # written with the links it would write (the pipeline refreshes right after promoting)
        self._written: dict[str, list[LinkTarget]] = {}

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
            with self._locked() as ledger:
                return self._write_locked(memory, related, relations, reason, now, ledger)
        except OSError as exc:
            raise VaultWriteError(f"cannot write the note for {memory.id}: {exc}") from exc

    @contextmanager
    def _locked(self) -> Iterator[WriteLedger]:
        """The write lock and the fresh ledger, for one note. A batch sink keeps the lock until
        its next flush, which comes every FLUSH_EVERY notes (entity notes wait for flush())."""
        if self.batch and not self._held:
            self._lock.acquire()
            self._held = True
        with nullcontext() if self._held else self._lock:
            ledger = self._fresh_ledger()
            yield ledger
            self._unflushed += 1
            if self._unflushed >= FLUSH_EVERY:
                self._flush_locked(ledger, final=False)

    def flush(self) -> None:
        """Write the collected entity links and fold the ledger journal into its snapshot
        (atomic); cheap when nothing is pending. The locator's map is left for the next
        process, with the entity notes just written."""
        if (self._ledger is None or not self._ledger.pending) and not self._entities.notes:
            self.locator.save()
            self._release_held()
            return
        try:
            with self._lock:
                self._flush_locked(self._fresh_ledger())
        except OSError as exc:
            raise VaultWriteError(f"cannot write the write ledger: {exc}") from exc
        self.locator.save()

    close = flush

    def _flush_locked(self, ledger: WriteLedger, *, final: bool = True) -> None:
        """``final``: flush() / close(), else every FLUSH_EVERY notes of a run."""
        try:
            if final:
                self._entities.write(durable=not self.batch, written=self.locator.record_text)
            if self.batch:
                sync_filesystem(self.vault)  # the notes written since the last flush, at once
            # A batch's journal lines are synced with its notes just above, so the snapshot (the
            # whole ledger, rewritten and fsynced: 0.3 s at 15k notes) is folded only once the
            # journal is a quarter of it, not at every run's end; an interactive sink's notes
            # are fsynced one by one and its journal is not: its close folds it.
            if (final and not self.batch) or ledger.pending >= max(
                FLUSH_EVERY, len(ledger.entries) // 4
            ):
                ledger.save()
            self._unflushed = 0
        finally:
            self._release_held()

    def _release_held(self) -> None:
        if self._held:
            self._held = False
            self._notes_dir = None
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
        found = self._locate(memory.id, ledger, memory.promoted_to)
        existing, parsed = found if found is not None else (None, None)
        if existing is not None:
            renamed = self._retitled(existing, memory, ledger, now)
            if renamed != existing:  # rewritten under its new name: read that
                existing, parsed = renamed, None
        links = self._links(memory, related, relations, ledger)
        if existing is None:
            return self._write_new(memory, links, reason, now, ledger)
        rendered = render_note(
            memory, note_name(memory), links=links, reason=reason, now=now, version=self.version
        )
        written, rewritten = update_existing_note(
            self.vault,
            existing,
            memory.id,
            rendered,
            links,
            ledger,
            now,
            durable=not self.batch,
            parsed=parsed,
        )
        if rewritten:
            self.locator.record(memory.id, existing)
            self._update_entity_notes(memory, existing.stem)
            self._written[memory.id] = links
        return written

    def _write_new(
        self,
        memory: Memory,
        links: list[LinkTarget],
        reason: str,
        now: float,
        ledger: WriteLedger,
    ) -> WrittenNote:
        """A note the memory never had: named, rendered, written, then recorded where it was
        looked for (the ledger and the locator)."""
        directory = self._notes_directory()
        name = note_name(memory)
        reserved = self._entity_stems.taken() if self.entity_notes else ()
        path = self._free_names.new_note_path(directory, name.stem, reserved)
        rendered = render_note(
            memory, name, links=links, reason=reason, now=now, version=self.version
        )
        text, checksum = rendered.text(), body_checksum(rendered.body)
        atomic_write_text(path, text, durable=not self.batch)
        rel = path.relative_to(self.vault).as_posix()  # the folder is resolved, the name no link
        ledger.set(memory.id, LedgerEntry(rel, checksum, now))
        self.locator.record(memory.id, path)
        self._update_entity_notes(memory, path.stem)
        self._written[memory.id] = links
        return WrittenNote(memory.id, rel, created=True)

    def _notes_directory(self) -> Path:
        """The notes folder, resolved (checked inside the vault) and made. A batch sink checks
        it once while it holds the lock, an interactive one for every note."""
        if self._notes_dir is None or not self._held:
            directory = ensure_inside(self.vault, self.folder)
            directory.mkdir(parents=True, exist_ok=True)
            self._notes_dir = directory
        return self._notes_dir

    def _find_existing(self, memory_id: str, ledger: WriteLedger, hint: str | None) -> Path | None:
        found = self._locate(memory_id, ledger, hint)
        return found[0] if found is not None else None

    def _links(
        self,
        memory: Memory,
        related: Sequence[Memory],
        relations: Sequence[Relation],
        ledger: WriteLedger,
    ) -> list[LinkTarget]:
        """The note's links (vault_sync.note_links), a renamed note found by its id."""
        return note_links(
            self.vault,
            memory,
            related,
            relations,
            ledger,
            entity_notes=self.entity_notes,
            find=self.locator.find,
            entity_stem=self._entity_stems.stem,
        )

    def _locate(
        self, memory_id: str, ledger: WriteLedger, hint: str | None
    ) -> tuple[Path, ParsedNote | None] | None:
        """The note carrying ``memory_id`` and, where it was read to check that, its parse
        (an update then reads the note once, not twice: a YAML parse is ~0.35 ms)."""
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
            read = read_note(path) if path.is_file() else None
            if read is not None and read.id == memory_id:
                return path, read.parsed
        # Moved or renamed by a person: the locator knows every note's id (one walk per sink).
        # A ledger entry or hint means a note existed, so a miss then re-walks the vault even
        # if the locator's map is recent (another process may have written it after our walk).
        moved = self.locator.find(memory_id, expected=bool(candidates))
        return (moved, None) if moved is not None else None

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
        leaked_context: str | None = None,
    ) -> str | None:
        """A later run's care for an existing note: the short title (renamed if it still has
        the legacy name), the managed Related list, and a Context section that reads
        ``leaked_context`` (vault_sync.leaked_context), nothing else (the body: note_refresh).
        Returns what changed ("renamed", "context", "related", joined by "+"), or None."""
        try:
            with self._locked() as ledger:
                links = self._links(memory, related, relations, ledger)
                if self._written.get(memory.id) == links:
                    return None  # this sink wrote it with these very links (and its short title)
                found = self._locate(memory.id, ledger, memory.promoted_to)
                if found is None:
                    return None
                path, parsed = found
                before = len(self.renamed)
                path = self._retitled(path, memory, ledger, now)
                return refresh_note_body(
                    self.vault,
                    path,
                    parsed,
                    memory,
                    links,
                    ledger,
                    now,
                    renamed=len(self.renamed) > before,
                    leaked_context=leaked_context,
                    write_anew=lambda reason: self._write_locked(
                        memory, related, relations, reason, now, ledger
                    ),
                )
        except OSError as exc:
            raise VaultWriteError(f"cannot update the note of {memory.id}: {exc}") from exc

    def prune_entity_links(self, dead: Callable[[str], bool]) -> int:
        """Take ``- [[stem]]`` lines with ``dead(stem)`` out of every entity note's list, under
        the write lock (entity_notes.prune_entity_notes); how many went."""
        try:
            with nullcontext() if self._held else self._lock:
                return prune_entity_notes(self.vault, self.folder, dead, durable=not self.batch)
        except OSError as exc:
            raise VaultWriteError(f"cannot update the entity notes: {exc}") from exc

    def _update_entity_notes(self, memory: Memory, note_stem: str) -> None:
        if self.entity_notes:
            self._entities.add(memory.entities, note_stem)
            if not self.batch:  # fsynced, with the note
                self._entities.write(written=self.locator.record_text)


__all__ = ["ObsidianNoteSink", "WrittenNote"]
