"""Builds the pipeline's collaborators from Settings: store, embeddings, vault sink, tracker.

A dry run opens nothing for writing: the store is read into memory from its files (no lock
file, no quarantine rewrite, no directory created), the tracker is opened only if it already
exists, and no vault sink is made. ``notes`` says in words what was wired, fallbacks included.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cortexgraph.activation.monitor.ledger_store import (
    drop_monitor_records,
    isolate_monitor_records,
)
from cortexgraph.agents.protocols import IssueTracker, NoteSink
from cortexgraph.settings import Settings
from cortexgraph.storage import MemoryStore, open_store
from cortexgraph.storage.embeddings import EmbeddingCache, default_cache
from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.storage.jsonl_lines import quarantine_path
from cortexgraph.user_store import open_configured_tracker, open_issue_tracker, read_store_copy

log = logging.getLogger(__name__)


@dataclass
class Collaborators:
    store: MemoryStore
    embedder: EmbeddingCache | None
    sink: NoteSink | None
    tracker: IssueTracker | None
    promote: Callable[[str, str, float], Any] | None
    dry_run: bool
    notes: list[str] = field(default_factory=list)
    _issue_batch: ExitStack = field(default_factory=ExitStack, repr=False)
    # the open batch's state (storage.beads.batch.BatchState): what it saw of the issue file
    issue_batch: Any = None

    def one_issue_commit(self, author: str) -> ExitStack:
        """Every agent's issue changes in one commit, made by ``finish`` (or when the returned
        context ends, if the run fails first). Each agent's block still ends synced and named
        as pending (storage.beads.BeadsTracker.batch): the commit rewrites the 2 MB issue file
        and stores it in git once a run, not once an agent."""
        batch = getattr(self.tracker, "batch", None)
        if callable(batch):
            self.issue_batch = self._issue_batch.enter_context(batch(author))
        return self._issue_batch

    def finish(self) -> None:
        """Commit the run's issue changes; persist what a live run should keep (the embedding
        cache, the vault's write ledger); a dry run keeps nothing."""
        self._issue_batch.close()
        if self.dry_run:
            return
        if self.embedder is not None:
            self.embedder.save()
        close = getattr(self.sink, "close", None)
        if callable(close):
            close()  # syncs the notes and the ledger journal (folded once it is a quarter)


def open_collaborators(
    settings: Settings, *, dry_run: bool, use_embeddings: bool = True
) -> Collaborators:
    notes: list[str] = []
    if dry_run:
        preview = read_store_copy(settings)
        drop_monitor_records(preview)  # the behaviour monitor's ledger is not the user's memory
        notes.append(
            f"dry run: read {len(preview)} memories from {settings.storage_path}; "
            "nothing will be written"
        )
        notes.extend(lines.describe() for lines in preview.unreadable)
        store: MemoryStore = preview
    else:
        quarantines = [
            quarantine_path(settings.storage_path / name)
            for name in (settings.memories_filename, settings.relations_filename)
        ]
        held = [_size(q) for q in quarantines]
        store = open_store(settings.storage_path, settings.store_config())
        # The open moves unreadable lines aside with a warning on stderr, which a scheduled
        # run's user never reads: the run's report (the Prefect artifact) says it instead.
        for q, before in zip(quarantines, held, strict=True):
            if added := _lines_after(q, before):
                notes.append(f"moved {added} unreadable line(s) of the store to {q}")
        moved = isolate_monitor_records(store, settings.storage_path)
        if moved.moved:
            notes.append(
                f"moved {moved.memories_moved} behaviour-monitor records out of the "
                f"store into {moved.ledger}"
            )
        notes.append(f"store {settings.storage_path} ({len(store)} memories)")
    embedder = None
    if use_embeddings and settings.enable_embeddings:
        embedder = default_cache(settings.storage_path)
        if embedder is not None:
            backend = getattr(embedder.embedder, "backend", "?")
            # The cache's file is read when a step needs its vectors, not to count them here.
            notes.append(f"similarity by {embedder.name} on {backend}")
        else:
            notes.append("embedding model not installed: similarity by TF-IDF")
    else:
        notes.append("embeddings switched off: similarity by TF-IDF")
    tracker, tracker_note = _tracker(settings, dry_run)
    notes.append(tracker_note)
    sink, promote = None, None
    if not dry_run:
        from cortexgraph.vault_sync import ObsidianNoteSink

        # A batch job that closes its sink (finish): entity notes once per run. The promoter
        # writes through the sink itself (promote_memory's notes) and marks its memories in
        # one store write after the sink's flush, so no promote hook is handed in.
        if not settings.vault_path.expanduser().is_dir() and settings.ltm_vault_path:
            notes.append(f"the vault {settings.vault_path} did not exist: created")
        sink = ObsidianNoteSink(
            settings.vault_path,
            settings.ltm_promoted_folder,
            create=settings.unattended_vault_may_be_created,
            batch=True,
        )
        notes.append(f"promotions go to the vault {settings.vault_path}")
    return Collaborators(store, embedder, sink, tracker, promote, dry_run, notes)


def _size(path: Path) -> int:
    """A quarantine file's size; 0 where there is none or it cannot be read (a storage path
    that is a file: the store's open then says so in its own words)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _lines_after(path: Path, offset: int) -> int:
    """The lines a quarantine file gained past ``offset`` (the open appends to it): a run
    reads only what its open added, not the whole file every time."""
    if _size(path) <= offset:
        return 0
    try:
        with path.open("rb") as f:
            f.seek(offset)
            return sum(1 for line in f if line.strip())
    except OSError:
        return 0


def _tracker(settings: Settings, dry_run: bool) -> tuple[IssueTracker, str]:
    if not dry_run:
        return open_issue_tracker(settings)
    if settings.beads_enabled:
        try:
            tracker = open_configured_tracker(settings, init=False)
            return tracker, f"issues read from {tracker.path} (not written: dry run)"
        except CortexGraphError:
            pass
    # Here only: a live run never needs the in-memory tracker's module (two dataclasses).
    from cortexgraph.storage.beads.memory_tracker import InMemoryIssueTracker

    return InMemoryIssueTracker(), "no issue tracker yet: clusters handed to merge directly"


__all__ = ["Collaborators", "open_collaborators"]
