"""The small interfaces agents depend on. Fakes for tests are obvious from these.

Agents never import Prefect, MCP or a concrete store: a flow, the CLI or the MCP server hands them
a ``MemoryStore`` (storage.protocol), an ``Embedder``, a ``NoteSink`` and an ``IssueTracker``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from cortexgraph.storage.models import Memory, Relation
from cortexgraph.storage.protocol import MemoryStore


@runtime_checkable
class Embedder(Protocol):
    """Texts to L2-normalised float32 row vectors (storage.embeddings provides the real one)."""

    @property
    def name(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class NoteRef:
    """Where a promoted memory now lives in long-term memory."""

    memory_id: str
    path: str  # relative to the vault root
    created: bool  # False when an existing note was updated


class NoteView(Protocol):
    """What agents read back from a written note; NoteRef and vault_sync's WrittenNote fit."""

    @property
    def memory_id(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def created(self) -> bool: ...


@runtime_checkable
class NoteSink(Protocol):
    """Writes a memory as a long-term note (vault_sync.ObsidianNoteSink is the real one)."""

    def write_note(
        self,
        memory: Memory,
        *,
        related: Sequence[Memory] = (),
        relations: Sequence[Relation] = (),
        reason: str = "",
        now: float,
    ) -> NoteView: ...


@runtime_checkable
class IssueView(Protocol):
    """What agents read from an issue; storage.beads.BeadsIssue and TrackedIssue both fit."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def labels(self) -> tuple[str, ...]: ...
    @property
    def metadata(self) -> Mapping[str, Any]: ...
    @property
    def assignee(self) -> str | None: ...
    @property
    def description(self) -> str: ...


@dataclass(frozen=True, slots=True)
class TrackedIssue:
    """A plain IssueView (agents.memory_tracker returns these; fakes can build them)."""

    id: str
    title: str
    status: str
    labels: tuple[str, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    assignee: str | None = None
    description: str = ""


@runtime_checkable
class IssueTracker(Protocol):
    """Where agents record work for each other and for people (storage.beads is the real one).

    ``create`` with a ``dedupe_key`` returns the issue already holding that key (any status)
    instead of opening a second one. ``query`` matches issues carrying *all* ``labels``.
    ``update`` replaces title/description/status/priority/labels/assignee and merges
    ``metadata``; ``close`` on a closed issue returns it unchanged. Unknown ids raise
    ``storage.errors.NotFoundError``; bad arguments ``InvalidInputError``.
    """

    def create(
        self,
        title: str,
        *,
        description: str = "",
        labels: Sequence[str] = (),
        priority: int = 2,
        metadata: Mapping[str, Any] | None = None,
        dedupe_key: str | None = None,
    ) -> IssueView: ...

    def query(
        self,
        *,
        labels: Sequence[str] = (),
        status: str | None = None,
        assignee: str | None = None,
    ) -> Sequence[IssueView]: ...

    def claim(self, issue_id: str, assignee: str) -> IssueView | None:
        """Atomically take an open issue; None if someone else already has it."""
        ...

    def update(self, issue_id: str, **changes: Any) -> IssueView: ...

    def close(self, issue_id: str, reason: str) -> IssueView: ...


__all__ = [
    "Embedder",
    "IssueTracker",
    "IssueView",
    "MemoryStore",
    "NoteRef",
    "NoteSink",
    "NoteView",
    "TrackedIssue",
]
